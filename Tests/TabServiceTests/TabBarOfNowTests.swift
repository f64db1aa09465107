import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

/// The fields of tab bars as phones draw them now (docs/layout-format.md) through the service: the lint's warnings
/// on writes and validation (in process), and over a socket
/// the dark colours, labels, search role and groups compiled, android's five items and the dark drawing.
@Suite struct TabBarOfNowTests {
    static let now = Array(
        #"""
        {"schemaVersion": 1,
         "appearance": {"tintColor": "#007AFF", "dark": {"tintColor": "#0a84ff"}},
         "groups": [{"id": "main", "title": "Main", "tabs": ["home", "search"]}],
         "tabs": [
           {"id": "home", "title": "Home", "rootViewController": "HomeViewController", "accessibilityLabel": "Home screen"},
           {"id": "search", "title": "Search", "rootViewController": "SearchViewController", "role": "search"}
         ]}
        """#.utf8)

    static func rules(_ response: TestResponse) -> [String] {
        (CollectionHarness.object(response)["warnings"] as? [[String: Any]] ?? []).compactMap { $0["rule"] as? String }
    }

    @Test func aWriteWithWarningsSucceedsAndSaysThem() async throws {
        let harness = try await WriteHarness()
        let seven = document((0..<7).map { "Tab \($0)" })
        let created = await harness.send(.put, "/v1/accounts/seven/layout", headers: [("If-None-Match", "*")], body: seven)
        #expect(created.status == 201, "\(created.text)")
        #expect(Self.rules(created) == ["android-more", "iphone-overflow"])
        let warning = try #require((CollectionHarness.object(created)["warnings"] as? [[String: Any]])?.first)
        #expect(warning["pointer"] as? String == "/tabs" && (warning["message"] as? String)?.isEmpty == false)

        // Nothing to say: no member at all.
        let clean = await harness.send(.put, "/v1/accounts/two/layout", headers: [("If-None-Match", "*")], body: document(["A", "B"]))
        #expect(clean.status == 201 && CollectionHarness.object(clean)["warnings"] == nil, "\(clean.text)")

        // A patch is a write: it is linted too.
        let etag = try #require(clean.header("ETag"))
        let patched = await harness.respond(
            to: TestRequest(
                .patch, "/v1/accounts/two/layout",
                headers: [
                    ("Authorization", "Bearer \(ServiceHarness.token)"), ("If-Match", etag),
                    ("Content-Type", "application/merge-patch+json"),
                ], body: Array(##"{"appearance": {"backgroundColor": "#FFFFFF", "tintColor": "#FFFF00"}}"##.utf8)))
        #expect(patched.status == 200 && Self.rules(patched) == ["contrast"], "\(patched.text)")
    }

    @Test func validationAndDryRunsSayTheWarningsBesideTheCompiledLayout() async throws {
        let harness = try await WriteHarness()
        let seven = document((0..<7).map { "Tab \($0)" })
        let validated = await harness.send(.post, "/v1/validate", body: seven)
        #expect(validated.status == 200 && Self.rules(validated) == ["android-more", "iphone-overflow"], "\(validated.text)")
        #expect((CollectionHarness.object(validated)["tabs"] as? [Any])?.count == 7)
        let dry = await harness.send(.put, "/v1/accounts/dry/layout", query: [("dryRun", "true")], body: seven)
        #expect(Self.rules(dry) == ["android-more", "iphone-overflow"] || dry.status != 200, "\(dry.text)")
        let quiet = await harness.send(.post, "/v1/validate", body: Self.now)
        #expect(quiet.status == 200 && CollectionHarness.object(quiet)["warnings"] == nil, "\(quiet.text)")
    }

    @Test func refusalsOfTheNewFieldsNameTheirPointers() async throws {
        let harness = try await WriteHarness()
        let twoSearches = Array(
            #"{"tabs":[{"id":"a","title":"A","rootViewController":"A","role":"search"},{"id":"b","title":"B","rootViewController":"B","role":"search"}],"groups":[{"id":"g","title":"G","tabs":["zz"]}]}"#
                .utf8)
        let refused = await harness.send(.post, "/v1/validate", body: twoSearches)
        #expect(refused.status == 422)
        let pointers = (CollectionHarness.object(refused)["errors"] as? [[String: Any]])?.compactMap { $0["pointer"] as? String }
        #expect(pointers == ["/tabs/0/role", "/tabs/1/role", "/groups/0/tabs/0"])
    }

    @Test func overASocketClientsGetTheBarOf2026() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let json = [("Content-Type", "application/json")]
        let created = try await client.send("PUT", "/v1/accounts/now/layout", headers: ServiceHarness.admin(json), body: Self.now)
        #expect(created.status == 201, "\(created.text)")
        let tabs = try await client.send("GET", "/v1/accounts/now/tabs")
        let appearance = tabs.json?["appearance"] as? [String: Any]
        #expect((appearance?["dark"] as? [String: Any])?["tintColor"] as? String == "#0A84FF")
        let items = tabs.json?["tabs"] as? [[String: Any]]
        #expect(items?[0]["accessibilityLabel"] as? String == "Home screen" && items?[1]["role"] as? String == "search")
        #expect((tabs.json?["groups"] as? [[String: Any]])?.first?["tabs"] as? [String] == ["home", "search"])
        // A version by number and the bundle an app ships carry the same fields.
        let pinned = try await client.send("GET", "/v1/accounts/now/tabs?version=1")
        #expect(((pinned.json?["appearance"] as? [String: Any])?["dark"] as? [String: Any])?["tintColor"] as? String == "#0A84FF")
        let bundle = try await client.send("GET", "/v1/accounts/now/tabs/bundle")
        #expect(bundle.status == 200 && bundle.text.contains("Home screen") && bundle.text.contains("#0A84FF"), "\(bundle.text)")
        let legacy = try await client.send("GET", "/v1/accounts/now/ApplicationHierarchy.plist")
        #expect(legacy.text.components(separatedBy: "<key>TabBarAccessibilityLabel</key>").count == 2, "\(legacy.text)")

        let dark = try await client.send("GET", "/v1/accounts/now/tabs/preview.svg?scheme=dark")
        let light = try await client.send("GET", "/v1/accounts/now/tabs/preview.svg")
        #expect(dark.status == 200 && dark.header("Content-Type") == "image/svg+xml" && dark.text.contains("#0A84FF"), "\(dark.text)")
        #expect(dark.header("ETag") != light.header("ETag"))
        #expect(try await client.send("GET", "/v1/accounts/now/tabs/preview.svg?scheme=sepia").status == 400)

        let seven = try await client.send(
            "PUT", "/v1/accounts/seven/layout", headers: ServiceHarness.admin(json), body: document((0..<7).map { "Tab \($0)" }))
        #expect(
            seven.status == 201
                && (seven.json?["warnings"] as? [[String: Any]])?.contains { $0["rule"] as? String == "android-more" } == true)
        let android = try await client.send("GET", "/v1/accounts/seven/tabs?platform=android")
        #expect((android.json?["tabs"] as? [Any])?.count == 4 && ((android.json?["more"] as? [String: Any])?["tabs"] as? [Any])?.count == 3)
        #expect(android.header("Vary")?.contains("X-Client-Platform") == true)
        let header = try await client.send("GET", "/v1/accounts/seven/tabs", headers: [("X-Client-Platform", "android")])
        #expect((header.json?["tabs"] as? [Any])?.count == 4)
        let iphone = try await client.send("GET", "/v1/accounts/seven/tabs?platform=iphone")
        #expect((iphone.json?["tabs"] as? [Any])?.count == 7 && iphone.json?["more"] == nil)
    }
}
