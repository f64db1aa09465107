import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

/// App builds over a real socket (docs/builds.md): declared, checked at every publishing write, and never sent a
/// tab they cannot open.
@Suite(.serialized) struct BuildsLiveTests {
    static let json = [("Content-Type", "application/json")]

    static func object(_ response: HTTPTestClient.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    static func body(_ object: Any) -> [UInt8] { Array(try! JSONSerialization.data(withJSONObject: object)) }

    @Test func aLayoutEveryLiveBuildCanOpenOrNothing() async throws {
        let harness = try await ServiceHarness()
        defer { harness.application.stop() }
        let client = harness.client()
        let admin = ServiceHarness.admin(Self.json)
        // document(["Home", "Search"]) has tabs t0 (T0ViewController) and t1 (T1ViewController).
        let old = try await client.send(
            "PUT", "/v1/builds/iphone/2.0", headers: admin, body: Self.body(["viewControllers": ["T0ViewController"]]))
        #expect(old.status == 201 && Self.object(old)["appVersion"] as? String == "2.0", "\(String(decoding: old.body, as: UTF8.self))")
        let new = try await client.send(
            "PUT", "/v1/builds/iphone/2.1.0", headers: admin,
            body: Self.body(["viewControllers": ["T0ViewController", "T1ViewController"]]))
        #expect(new.status == 201 && Self.object(new)["appVersion"] as? String == "2.1")
        #expect(
            try await client.send("PUT", "/v1/builds/iphone/2", headers: admin, body: Self.body(["viewControllers": ["T0ViewController"]]))
                .status == 200)

        // The gate: 422 at the tab's pointer, naming the build; nothing stored.
        let refused = try await client.send(
            "PUT", "/v1/accounts/gated/layout", headers: admin + [("If-None-Match", "*")], body: document(["Home", "Search"]))
        #expect(refused.status == 422)
        let problem = Self.object(refused)
        #expect((problem["type"] as? String)?.hasSuffix("incompatible-build") == true)
        let errors = try #require(problem["errors"] as? [[String: Any]])
        #expect(errors.count == 1 && errors[0]["pointer"] as? String == "/tabs/1/rootViewController")
        #expect(errors[0]["value"] as? String == "T1ViewController")
        #expect((errors[0]["build"] as? [String: String]) == ["platform": "iphone", "appVersion": "2.0"])
        #expect(try await client.send("GET", "/v1/accounts/gated/layout", headers: admin).status == 404)

        // A draft is stored and says which builds it would fail; a forced publish goes through and is audited.
        let draft = try await client.send(
            "PUT", "/v1/accounts/gated/layout?publish=false", headers: admin + [("If-None-Match", "*")], body: document(["Home", "Search"]))
        #expect(
            draft.status == 201
                && (Self.object(draft)["incompatibleBuilds"] as? [[String: String]]) == [["platform": "iphone", "appVersion": "2.0"]])
        let forced = try await client.send(
            "PUT", "/v1/accounts/gated/layout?allowIncompatible=true", headers: admin + [("If-None-Match", "*")],
            body: document(["Home", "Search"]))
        #expect(forced.status == 200 || forced.status == 201, "\(String(decoding: forced.body, as: UTF8.self))")
        let audit = String(decoding: try await client.send("GET", "/v1/audit?account=gated", headers: admin).body, as: UTF8.self)
        #expect(audit.contains("allowIncompatible: iphone 2.0"), "\(audit)")

        // Serving: build 2.0 gets the tab it can open, named what was held back; 2.1 and undeclared builds get both.
        let trimmed = try await client.send(
            "GET", "/v1/accounts/gated/tabs",
            headers: [
                ("X-Client-Platform", "iphone"), ("X-App-Version", "2.0.0"), ("User-Agent", "Gated/2.0 CFNetwork/1496.0.7 Darwin/23.5.0"),
            ])
        #expect(trimmed.status == 200 && trimmed.header("Tabs-Withheld") == "t1")
        #expect((Self.object(trimmed)["tabs"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["t0"])
        #expect(trimmed.header("Vary")?.contains("X-App-Version") == true && trimmed.header("Vary")?.contains("X-Client-Platform") == true)
        let again = try await client.send(
            "GET", "/v1/accounts/gated/tabs",
            headers: [("X-Client-Platform", "iphone"), ("X-App-Version", "2.0"), ("If-None-Match", trimmed.header("ETag") ?? "")])
        #expect(again.status == 304)
        // The same bytes again: answered and counted each time (a declared build's answer is not remembered, so
        // that its sightings and withheld answers are all counted).
        for _ in 0..<2 {
            let same = try await client.send(
                "GET", "/v1/accounts/gated/tabs",
                headers: [("X-Client-Platform", "iphone"), ("X-App-Version", "2.0"), ("If-None-Match", trimmed.header("ETag") ?? "")])
            #expect(same.status == 304)
        }
        for version in ["2.1", "3.0"] {
            let whole = try await client.send(
                "GET", "/v1/accounts/gated/tabs", headers: [("X-Client-Platform", "iphone"), ("X-App-Version", version)])
            #expect(whole.header("Tabs-Withheld") == nil && (Self.object(whole)["tabs"] as? [[String: Any]])?.count == 2, "\(version)")
        }
        let metrics = String(decoding: try await client.send("GET", "/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"tabserver_tabs_withheld_total{platform="iphone",app_version="2.0"} 4"#), "\(metrics.suffix(400))")

        // The list says when a client was last seen and that both are live; a retired build gets every tab again.
        let builds = try #require(Self.object(try await client.send("GET", "/v1/builds", headers: admin))["builds"] as? [[String: Any]])
        #expect(builds.compactMap { $0["appVersion"] as? String } == ["2.0", "2.1"])
        #expect(
            builds.allSatisfy { $0["live"] as? Bool == true } && builds[0]["lastSeenAt"] is String
                && builds[1]["declaredBy"] as? String == "tester")
        #expect(try await client.send("DELETE", "/v1/builds/iphone/2.0", headers: admin).status == 204)
        #expect(try await client.send("DELETE", "/v1/builds/iphone/2.0", headers: admin).status == 404)
        let retired = try await client.send(
            "GET", "/v1/accounts/gated/tabs", headers: [("X-Client-Platform", "iphone"), ("X-App-Version", "2.0")])
        #expect(retired.header("Tabs-Withheld") == nil && (Self.object(retired)["tabs"] as? [[String: Any]])?.count == 2)
    }

    @Test func aRolloutOfACandidateABuildCannotOpenIsRefused() async throws {
        let harness = try await ServiceHarness()
        defer { harness.application.stop() }
        let client = harness.client()
        let admin = ServiceHarness.admin(Self.json)
        let first = try await client.send(
            "PUT", "/v1/accounts/rolled/layout", headers: admin + [("If-None-Match", "*")], body: document(["Home"]))
        #expect(first.status == 201)
        #expect(
            try await client.send(
                "PUT", "/v1/builds/iphone/2.0", headers: admin, body: Self.body(["viewControllers": ["T0ViewController"]])
            ).status == 201)
        let draft = try await client.send(
            "PUT", "/v1/accounts/rolled/layout?publish=false", headers: admin + [("If-Match", first.header("ETag") ?? "")],
            body: document(["Home", "Search"]))
        let version = try #require(Self.object(draft)["version"] as? Int)
        let plan = Self.body(["version": version, "percent": 10])
        let refused = try await client.send(
            "POST", "/v1/accounts/rolled/layout/rollout", headers: admin + [("If-Match", first.header("ETag") ?? "")], body: plan)
        #expect(refused.status == 422 && (Self.object(refused)["type"] as? String)?.hasSuffix("incompatible-build") == true)
        let forced = try await client.send(
            "POST", "/v1/accounts/rolled/layout/rollout?allowIncompatible=true",
            headers: admin + [("If-Match", first.header("ETag") ?? "")],
            body: plan)
        #expect(forced.status == 201, "\(String(decoding: forced.body, as: UTF8.self))")
        // Its raise and its completion give the candidate to more installs: the gate again, and the same way past it.
        let rollout = "/v1/accounts/rolled/layout/rollout"
        let raise = Array(#"{"percent": 50}"#.utf8)
        #expect(try await client.send("PATCH", rollout, headers: admin, body: raise).status == 422)
        #expect(try await client.send("PATCH", rollout + "?allowIncompatible=true", headers: admin, body: raise).status == 200)
        #expect(try await client.send("PATCH", rollout, headers: admin, body: Array(#"{"paused": true}"#.utf8)).status == 200)
        let complete = try await client.send("POST", rollout + "/complete", headers: admin)
        #expect(complete.status == 422 && (Self.object(complete)["type"] as? String)?.hasSuffix("incompatible-build") == true)
        #expect(try await client.send("POST", rollout + "/complete?allowIncompatible=true", headers: admin).status == 200)
    }

    static func layout(_ tabs: [(id: String, screen: String)]) -> [UInt8] {
        body(["schemaVersion": 1, "tabs": tabs.map { ["id": $0.id, "title": $0.id, "rootViewController": $0.screen] }] as [String: Any])
    }

    /// A build that can open none of the current tabs gets the newest earlier version it opens whole; versions
    /// served before stay reachable by number, a draft never.
    @Test func aBuildThatOpensNothingNowGetsTheNewestEarlierVersionItOpens() async throws {
        let harness = try await ServiceHarness()
        defer { harness.application.stop() }
        let client = harness.client()
        let admin = ServiceHarness.admin(Self.json)
        let path = "/v1/accounts/fallback/layout"
        let v1 = try await client.send(
            "PUT", path, headers: admin + [("If-None-Match", "*")], body: Self.layout([("home", "HomeViewController")]))
        #expect(v1.status == 201)
        #expect(
            try await client.send(
                "PUT", "/v1/builds/iphone/1.0", headers: admin, body: Self.body(["viewControllers": ["HomeViewController"]])
            )
            .status == 201)
        let draft = try await client.send(
            "PUT", path + "?publish=false", headers: admin + [("If-Match", v1.header("ETag") ?? "")],
            body: Self.layout([("home", "HomeViewController"), ("draft", "HomeViewController")]))
        #expect(Self.object(draft)["version"] as? Int == 2)
        let v3 = try await client.send(
            "PUT", path + "?allowIncompatible=true", headers: admin + [("If-Match", v1.header("ETag") ?? "")],
            body: Self.layout([("search", "SearchViewController")]))
        #expect(v3.status == 200 && Self.object(v3)["version"] as? Int == 3, "\(String(decoding: v3.body, as: UTF8.self))")

        let build = [("X-Client-Platform", "iphone"), ("X-App-Version", "1.0")]
        let old = try await client.send("GET", "/v1/accounts/fallback/tabs", headers: build)
        #expect(old.status == 200 && Self.object(old)["version"] as? Int == 1, "\(String(decoding: old.body, as: UTF8.self))")
        #expect(old.header("Tabs-Withheld") == nil && (Self.object(old)["tabs"] as? [[String: Any]])?.count == 1)
        let again = try await client.send(
            "GET", "/v1/accounts/fallback/tabs", headers: build + [("If-None-Match", old.header("ETag") ?? "")])
        #expect(again.status == 304)
        let undeclared = try await client.send(
            "GET", "/v1/accounts/fallback/tabs", headers: [("X-Client-Platform", "iphone"), ("X-App-Version", "1.1")])
        #expect(Self.object(undeclared)["version"] as? Int == 3)

        // By number: the version served before, the current one; never the draft.
        let first = try await client.send("GET", "/v1/accounts/fallback/tabs?version=1")
        #expect(
            first.status == 200 && Self.object(first)["version"] as? Int == 1
                && first.header("Cache-Control")?.contains("immutable") == true)
        #expect(try await client.send("GET", "/v1/accounts/fallback/tabs?version=3").status == 200)
        #expect(try await client.send("GET", "/v1/accounts/fallback/tabs?version=2").status == 404)
        #expect(try await client.send("GET", "/v1/accounts/fallback/tabs?version=9").status == 404)

        // With no earlier version it opens whole, 404 as before.
        #expect(
            try await client.send(
                "PUT", "/v1/builds/iphone/0.9", headers: admin, body: Self.body(["viewControllers": ["OtherViewController"]])
            )
            .status == 201)
        let none = try await client.send(
            "GET", "/v1/accounts/fallback/tabs", headers: [("X-Client-Platform", "iphone"), ("X-App-Version", "0.9")])
        #expect(none.status == 404)
    }

    @Test func badDeclarationsAreClearAndStoreNothing() async throws {
        let harness = try await ServiceHarness()
        defer { harness.application.stop() }
        let client = harness.client()
        let admin = ServiceHarness.admin(Self.json)
        let ok = Self.body(["viewControllers": ["A"]])
        #expect(try await client.send("PUT", "/v1/builds/watch/1.0", headers: admin, body: ok).status == 404)
        #expect(try await client.send("PUT", "/v1/builds/iphone/2.x", headers: admin, body: ok).status == 404)
        #expect(try await client.send("PUT", "/v1/builds/iphone/2.0", headers: Self.json, body: ok).status == 401)
        let bad = try await client.send(
            "PUT", "/v1/builds/iphone/2.0", headers: admin,
            body: Self.body(["viewControllers": ["A", 7, String(repeating: "x", count: 129)], "images": "no"] as [String: Any]))
        #expect(bad.status == 422)
        let pointers = (Self.object(bad)["errors"] as? [[String: Any]])?.compactMap { $0["pointer"] as? String }
        #expect(pointers == ["/viewControllers/1", "/viewControllers/2", "/images"], "\(String(decoding: bad.body, as: UTF8.self))")
        #expect(try await client.send("PUT", "/v1/builds/iphone/2.0", headers: admin, body: Array("[".utf8)).status == 400)
        let listed = Self.object(try await client.send("GET", "/v1/builds", headers: admin))["builds"] as? [Any]
        #expect(listed?.isEmpty == true)
    }
}
