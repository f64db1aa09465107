import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

/// A rollout's steps across two replicas on one PostgreSQL: both serve every step by the clock, and each step is
/// recorded once (one history entry each), although both replicas' steppers find it due.
extension ReplicationTests {
    @Test(.enabled(if: ReplicationTests.enabled))
    func eachStepOfARolloutIsRecordedOnceByOneOfTwoReplicas() async throws {
        let (a, b) = try await Self.twoReplicas()
        defer {
            a.kill9()
            b.kill9()
        }

        let client = HTTPTestClient(port: a.port)
        try await startRollout(
            a.port, "stepped",
            plan:
                #"{"version": 2, "steps": [{"percent": 10, "hold": "PT1S"}, {"percent": 50, "hold": "PT1S"}, {"percent": 100, "hold": "PT1S"}]}"#
        )

        // Replica B serves the rollout too (it learns of it from the store's notification), with the same arms as A.
        let learning = ContinuousClock.now
        while ContinuousClock.now - learning < .seconds(3) {
            let onB = try await HTTPTestClient(port: b.port).send("GET", "/v1/accounts/stepped/tabs", headers: [("X-Install-Id", "i-0")])
            if onB.header("Vary")?.contains("X-Install-Id") == true { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        for install in ["i-1", "i-2", "i-3", "i-4"] {
            let onA = try await HTTPTestClient(port: a.port).send("GET", "/v1/accounts/stepped/tabs", headers: [("X-Install-Id", install)])
            let onB = try await HTTPTestClient(port: b.port).send("GET", "/v1/accounts/stepped/tabs", headers: [("X-Install-Id", install)])
            #expect(onA.header("ETag") == onB.header("ETag") && onB.header("Vary")?.contains("X-Install-Id") == true, "\(install)")
        }

        // Three holds of a second: completed at about 3 s, by whichever replica's stepper recorded it.
        try await Task.sleep(for: .seconds(3.5))
        for port in [a.port, b.port] {
            let rollout = try await HTTPTestClient(port: port).send(
                "GET", "/v1/accounts/stepped/layout/rollout", headers: ServiceHarness.admin())
            #expect(rollout.json?["state"] as? String == "completed", "\(port): \(rollout.text)")
            let anyone = try await HTTPTestClient(port: port).send("GET", "/v1/accounts/stepped/tabs", headers: [("X-Install-Id", "x")])
            #expect(anyone.json?["version"] as? Int == 2, "both replicas serve the candidate to everyone")
        }
        let audit = try await client.send("GET", "/v1/audit?account=stepped&limit=100", headers: ServiceHarness.admin())
        let actions = ((audit.json?["entries"] as? [[String: Any]]) ?? []).compactMap { $0["action"] as? String }
        #expect(actions.filter { $0 == "rollout.stepped" }.count == 2, "two steps, each recorded once: \(actions)")
        #expect(actions.filter { $0 == "rollout.completed" }.count == 1, "\(actions)")
        #expect(actions.filter { $0 == "rollout.start" }.count == 1, "\(actions)")
    }

    /// A change recorded through replica A reaches B's clients as it reaches A's: B's `/v1/events` gives the change's
    /// `event: rollout` with its author, and a long-poll held on B by an install the change moves answers at once.
    @Test(.enabled(if: ReplicationTests.enabled))
    func aRolloutChangeThroughOneReplicaIsAnEventAndAWakeOnTheOther() async throws {
        let (a, b) = try await Self.twoReplicas()
        defer {
            a.kill9()
            b.kill9()
        }

        let client = HTTPTestClient(port: a.port)
        try await startRollout(a.port, "raised", plan: #"{"version": 2, "percent": 1, "seed": "fixed"}"#)

        // An install that B serves the stable version (1) while the rollout is at 1%.
        var held: (install: String, etag: String)?
        let learning = ContinuousClock.now
        while held == nil, ContinuousClock.now - learning < .seconds(3) {
            for install in (0..<20).map({ "install-\($0)" }) {
                let onB = try await HTTPTestClient(port: b.port).send(
                    "GET", "/v1/accounts/raised/tabs", headers: [("X-Install-Id", install)])
                guard onB.header("Vary")?.contains("X-Install-Id") == true else { break }
                if onB.json?["version"] as? Int == 1, let tag = onB.header("ETag") {
                    held = (install, tag)
                    break
                }
            }
            if held == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let (install, stableTag) = try #require(held, "B serves the rollout with the stable version to some install")

        // On B: a change feed from now, and that install's long-poll for 8 s.
        let feed = Task { try await HTTPTestClient(port: b.port).send("GET", "/v1/events", headers: ServiceHarness.admin()) }
        let waitStarted = ContinuousClock.now
        let poll = Task {
            try await HTTPTestClient(port: b.port).send(
                "GET", "/v1/accounts/raised/tabs?wait=8", headers: [("X-Install-Id", install), ("If-None-Match", stableTag)])
        }
        try await Task.sleep(for: .milliseconds(500))  // both are held on B

        let raised = try await client.send(
            "PATCH", "/v1/accounts/raised/layout/rollout", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: Array(#"{"percent": 100}"#.utf8))
        #expect(raised.status == 200, "\(raised.text)")

        let answer = try await poll.value
        #expect(answer.status == 200 && answer.json?["version"] as? Int == 2, "\(answer.status) \(answer.text)")
        #expect(ContinuousClock.now - waitStarted < .seconds(5), "B's long-poll answered when A recorded the raise, not at its deadline")
        let events = try await feed.value.text
        #expect(events.contains("event: rollout"), "\(events)")
        #expect(events.contains(#""percent":100"#) && events.contains(#""state":"running""#), "\(events)")
        #expect(
            events.contains(#""author":""#) && !events.contains(#""author":"tabserver""#), "the operator's change, as theirs: \(events)")

        // Both replicas show the same history of the rollout.
        let onA = try await client.send("GET", "/v1/accounts/raised/layout/rollout", headers: ServiceHarness.admin())
        let onB = try await HTTPTestClient(port: b.port).send("GET", "/v1/accounts/raised/layout/rollout", headers: ServiceHarness.admin())
        let changes = (onA.json?["history"] as? [[String: Any]])?.compactMap { $0["change"] as? String }
        #expect(changes == ["started", "raised"], "\(onA.text)")
        #expect((onB.json?["history"] as? [[String: Any]])?.count == 2)
    }

    /// A promotion through replica A is `event: promote` on B's change feed too (not the `event: layout` of a pointer
    /// that moved), with its environments and author, for a layout and for a strings table.
    @Test(.enabled(if: ReplicationTests.enabled))
    func aPromotionThroughOneReplicaIsAPromoteEventOnTheOther() async throws {
        let (a, b) = try await Self.twoReplicas(
            environment: ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "TABSERVER_ENVIRONMENTS": "staging,production"])
        defer {
            a.kill9()
            b.kill9()
        }
        let json = [("Content-Type", "application/json")]
        let client = HTTPTestClient(port: a.port)
        #expect(try await put(a.port, "promoted", ["one"]).status == 201, "written to staging")
        let strings = try await client.send(
            "PUT", "/v1/strings/de-AT", headers: ServiceHarness.admin([("Content-Type", "text/plain")]),
            body: Array(#""HOME_TAB" = "Daheim";"#.utf8))
        #expect(strings.status == 201)
        try await Task.sleep(for: .milliseconds(500))  // B has both

        for (path, subject) in [
            ("/v1/accounts/promoted/layout/promote", #""account":"promoted""#), ("/v1/strings/de-AT/promote", #""locale":"de-AT""#),
        ] {
            // B's position now (Last-Event-ID 0 is older than what it keeps: `reset` names it), so that what follows
            // is read from there however long the promotion takes to reach B (no race with a held request).
            let reset = try await HTTPTestClient(port: b.port).send(
                "GET", "/v1/events", headers: ServiceHarness.admin([("Last-Event-ID", "0")])
            ).text
            let position = String(reset.split(separator: "\n").first { $0.hasPrefix("id: ") }?.dropFirst(4) ?? "0")
            let promoted = try await client.send(
                "POST", path, headers: ServiceHarness.admin(json + [("If-None-Match", "*")]), body: Array(#"{"from": "staging"}"#.utf8))
            #expect([200, 201].contains(promoted.status), "\(path): \(promoted.text)")
            let events = try await HTTPTestClient(port: b.port).send(
                "GET", "/v1/events", headers: ServiceHarness.admin([("Last-Event-ID", position)])
            ).text
            #expect(events.contains("event: promote") && !events.contains("event: layout"), "\(path): \(events)")
            #expect(
                events.contains(subject) && events.contains(#""from":"staging""#) && events.contains(#""environment":"production""#),
                "\(events)")
            #expect(events.contains(#""author":""#), "\(events)")
        }
        let onB = try await HTTPTestClient(port: b.port).send("GET", "/v1/accounts/promoted/tabs")
        #expect(onB.json?["layout"] as? String == "promoted", "B serves the promoted layout in production")
    }
}
