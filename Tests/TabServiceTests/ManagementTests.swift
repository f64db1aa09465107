import Foundation
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// The management plane over a real socket.
@Suite struct ManagementTests {
    func put(_ client: HTTPTestClient, _ account: String, _ body: [UInt8], _ extra: [(String, String)] = []) async throws
        -> HTTPTestClient.Response
    {
        try await client.send(
            "PUT", "/v1/accounts/\(account)/layout", headers: ServiceHarness.admin([("Content-Type", "application/json")] + extra),
            body: body)
    }

    @Test func writesNeedAToken() async throws {
        let harness = try await ServiceHarness()
        let refused = try await harness.client().send(
            "PUT", "/v1/accounts/a/layout", headers: [("Content-Type", "application/json")], body: document(["A"]))
        #expect(refused.status == 401)
        #expect(refused.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        let wrong = try await harness.client().send("GET", "/v1/accounts", headers: [("Authorization", "Bearer \(ServiceHarness.token)x")])
        #expect(wrong.status == 401)
        #expect(!wrong.text.contains(ServiceHarness.token))
    }

    @Test func aStoredVersionADraftTooIsDrawnForAReadToken() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let created = try await put(client, "drawn", document(["One"]), [("If-None-Match", "*")])
        let etag = try #require(created.header("ETag"))
        let draft = try await client.send(
            "PUT", "/v1/accounts/drawn/layout?publish=false",
            headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", etag)]), body: document(["One", "Drafted"]))
        #expect(draft.status == 200 || draft.status == 201, "\(draft.text)")
        let made = try await client.send(
            "POST", "/v1/tokens", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: Array(#"{"name": "viewer", "scopes": ["read"], "accounts": ["drawn"]}"#.utf8))
        let viewer = [("Authorization", "Bearer \(try #require(made.json?["token"] as? String))")]

        let drawn = try await client.send("GET", "/v1/accounts/drawn/layout/versions/2/preview.svg?platform=iphone", headers: viewer)
        #expect(drawn.status == 200 && drawn.header("Content-Type") == "image/svg+xml", "\(drawn.text)")
        #expect(drawn.text.contains(">Drafted<") && drawn.text.contains("version 2"))
        let first = try await client.send("GET", "/v1/accounts/drawn/layout/versions/1/preview.svg", headers: viewer)
        #expect(first.status == 200 && first.text.contains(">One<") && !first.text.contains("Drafted"))
        // Clients are not served the draft; the drawing is no way around the token either.
        #expect(try await client.send("GET", "/v1/accounts/drawn/tabs/preview.svg").text.contains("Drafted") == false)
        #expect(try await client.send("GET", "/v1/accounts/drawn/layout/versions/2/preview.svg").status == 401)
        #expect(try await client.send("GET", "/v1/accounts/jack/layout/versions/1/preview.svg", headers: viewer).status == 403)
        #expect(try await client.send("GET", "/v1/accounts/drawn/layout/versions/9/preview.svg", headers: viewer).status == 404)
    }

    @Test func answersCarryARequestIdAndEchoTheClientsOwn() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let made = try await client.send("GET", "/v1/accounts", headers: ServiceHarness.admin())
        let first = try #require(made.header("Request-Id"))
        let second = try #require(try await client.send("GET", "/v1/nope").header("Request-Id"))
        #expect(first != second)
        #expect(try await client.send("GET", "/v1/nope", headers: [("X-Request-Id", "trace-42")]).header("Request-Id") == "trace-42")
        #expect(try await client.send("GET", "/v1/nope", headers: [("Request-Id", "bad id!")]).header("Request-Id") != "bad id!")
    }

    @Test func operatorLoopCreateUpdateConflictHistoryRestore() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let created = try await put(client, "loop", document(["One"]), [("If-None-Match", "*")])
        #expect(created.status == 201)
        let etag1 = try #require(created.header("ETag"))
        #expect(created.header("Layout-Version") == "1")
        let readBefore = try await client.send("GET", "/v1/accounts/loop/tabs")
        #expect(try await put(client, "loop", document(["Two"])).status == 428)
        let updated = try await put(client, "loop", document(["Two"]), [("If-Match", etag1), ("Change-Message", "rename")])
        #expect(updated.status == 200)
        let etag2 = try #require(updated.header("ETag"))
        let stale = try await put(client, "loop", document(["Three"]), [("If-Match", etag1)])
        #expect(stale.status == 412 && stale.header("ETag") == etag2)
        let readAfter = try await client.send("GET", "/v1/accounts/loop/tabs", headers: [("If-None-Match", readBefore.header("ETag")!)])
        #expect(readAfter.status == 200, "the next revalidation sees the new layout")
        let versions = try await client.send("GET", "/v1/accounts/loop/layout/versions", headers: ServiceHarness.admin())
        let entries = try #require(versions.json?["versions"] as? [[String: Any]])
        #expect(entries.map { $0["version"] as? Int } == [2, 1])
        #expect(entries.first?["message"] as? String == "rename" && entries.first?["author"] as? String == "tester")
        let restored = try await client.send(
            "POST", "/v1/accounts/loop/layout/versions/1/restore", headers: ServiceHarness.admin([("If-Match", etag2)]))
        #expect(restored.status == 200 && restored.header("Layout-Version") == "3")
        let source = try await client.send("GET", "/v1/accounts/loop/layout", headers: ServiceHarness.admin())
        #expect(source.body == document(["One"]))
    }

    @Test func invalidSourcesAre422WithPointersAndStoreNothing() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let bad = try await put(client, "bad", Array(#"{"tabs":[{"title":"A","rootViewController":"A","reselect":"x"}]}"#.utf8))
        #expect(bad.status == 422)
        let errors = try #require(bad.json?["errors"] as? [[String: Any]])
        #expect(errors.first?["pointer"] as? String == "/tabs/0/reselect" && errors.first?["line"] as? Int == 1)
        #expect(try await client.send("GET", "/v1/accounts/bad/layout", headers: ServiceHarness.admin()).status == 404)
        let wrongType = try await client.send(
            "PUT", "/v1/accounts/bad/layout", headers: ServiceHarness.admin([("Content-Type", "text/plain")]), body: document(["A"]))
        #expect(wrongType.status == 415)
    }

    @Test func bodyOverOneMebibyteIs413() async throws {
        let harness = try await ServiceHarness()
        let big = [UInt8](repeating: 0x20, count: 1024 * 1024 + 1)
        let response = try await put(harness.client(), "big", big)
        #expect(response.status == 413)
    }

    @Test func deletingABaseThatOthersExtendIs409() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let base = try await put(client, "base", document(["B"]))
        let overlay = Array(#"{"schemaVersion":1,"extends":"base","tabs":[{"id":"extra","title":"E","rootViewController":"E"}]}"#.utf8)
        #expect(try await put(client, "over", overlay).status == 201)
        let refused = try await client.send(
            "DELETE", "/v1/accounts/base/layout", headers: ServiceHarness.admin([("If-Match", base.header("ETag")!)]))
        #expect(refused.status == 409 && refused.text.contains("over"))
        let before = try await client.send("GET", "/v1/accounts/over/tabs")
        let changed = try await put(client, "base", document(["B2"]), [("If-Match", base.header("ETag")!)])
        #expect(changed.status == 200)
        let after = try await client.send("GET", "/v1/accounts/over/tabs")
        #expect(after.header("ETag") != before.header("ETag"), "an overlay changes when its base does")
        #expect((after.json?["tabs"] as? [[String: Any]])?.first?["title"] as? String == "B2")
    }

    @Test func ofSixteenRacingWritersExactlyOneWins() async throws {
        let harness = try await ServiceHarness(store: try SQLiteStore(path: NSTemporaryDirectory() + "race-\(UUID().uuidString).sqlite"))
        let created = try await put(harness.client(), "race", document(["zero"]))
        let etag = try #require(created.header("ETag"))
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<16 {
                group.addTask {
                    try await self.put(HTTPTestClient(port: harness.port), "race", document(["writer \(i)"]), [("If-Match", etag)]).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 200 }.count == 1)
        #expect(statuses.filter { $0 == 412 }.count == 15)
    }

    @Test func readsStayAnsweredDuringABurstOfWrites() async throws {
        let harness = try await ServiceHarness(store: try SQLiteStore(path: NSTemporaryDirectory() + "burst-\(UUID().uuidString).sqlite"))
        _ = try await put(harness.client(), "burst", document(["0"]))
        async let writes: Void = {
            let writer = HTTPTestClient(port: harness.port)
            for i in 1...40 {
                let current = try await writer.send("GET", "/v1/accounts/burst/layout", headers: ServiceHarness.admin())
                _ = try await self.put(writer, "burst", document(["\(i)"]), [("If-Match", current.header("ETag")!)])
            }
        }()
        let reader = harness.client()
        var titles: Set<String> = []
        for _ in 0..<200 {
            let response = try await reader.send("GET", "/v1/accounts/burst/tabs")
            #expect(response.status == 200)
            if let tabs = response.json?["tabs"] as? [[String: Any]], let title = tabs.first?["title"] as? String { titles.insert(title) }
        }
        try await writes
        // Every read got a whole layout of some version, and every write landed.
        #expect(!titles.isEmpty && titles.isSubset(of: Set((0...40).map(String.init))))
        let source = try await reader.send("GET", "/v1/accounts/burst/layout", headers: ServiceHarness.admin())
        #expect(source.header("Layout-Version") == "41")
        let last = try await reader.send("GET", "/v1/accounts/burst/tabs")
        #expect((last.json?["tabs"] as? [[String: Any]])?.first?["title"] as? String == "40")
    }

    @Test func patchesAndStringsTables() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let created = try await put(client, "p", document(["A"]))
        let patch = #"[{"op":"add","path":"/tabs/-","value":{"id":"b","title":"B","rootViewController":"B"}}]"#
        let patched = try await client.send(
            "PATCH", "/v1/accounts/p/layout",
            headers: ServiceHarness.admin([("Content-Type", "application/json-patch+json"), ("If-Match", created.header("ETag")!)]),
            body: Array(patch.utf8))
        #expect(patched.status == 200)
        let tabs = try await client.send("GET", "/v1/accounts/p/tabs")
        #expect((tabs.json?["tabs"] as? [[String: Any]])?.count == 2)
        let table = try await client.send(
            "PUT", "/v1/strings/de", headers: ServiceHarness.admin([("Content-Type", "text/plain")]),
            body: Array(#""HOME_TAB" = "Startseite";"#.utf8))
        #expect(table.status == 201)
        let german = try await client.send("GET", "/v1/accounts/anyone/tabs", headers: [("Accept-Language", "de")])
        #expect((german.json?["tabs"] as? [[String: Any]])?.first?["title"] as? String == "Startseite")
    }
}
