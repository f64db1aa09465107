import Foundation
import TabTestSupport
import Testing

/// A rollout's steps across two replicas on one PostgreSQL: both serve every step by the clock, and each step is
/// recorded once (one history entry each), although both replicas' steppers find it due.
extension ReplicationTests {
    @Test(.enabled(if: ReplicationTests.enabled))
    func eachStepOfARolloutIsRecordedOnceByOneOfTwoReplicas() async throws {
        let database = try Self.freshDatabase()
        let directory = NSTemporaryDirectory()
        let a = try await ServerProcess.start(store: database, directory: directory)
        defer { a.kill9() }
        let b = try await ServerProcess.start(store: database, directory: directory)
        defer { b.kill9() }
        try await Task.sleep(for: .milliseconds(300))  // both listeners are listening

        let first = try await put(a.port, "stepped", ["one"])
        let etag = try #require(first.header("ETag"))
        let client = HTTPTestClient(port: a.port)
        let draft = try await client.send(
            "PUT", "/v1/accounts/stepped/layout?publish=false",
            headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", etag)]), body: document(["one", "two"]))
        #expect(draft.status == 200)
        let plan =
            #"{"version": 2, "steps": [{"percent": 10, "hold": "PT1S"}, {"percent": 50, "hold": "PT1S"}, {"percent": 100, "hold": "PT1S"}]}"#
        let started = try await client.send(
            "POST", "/v1/accounts/stepped/layout/rollout",
            headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", etag)]), body: Array(plan.utf8))
        #expect(started.status == 201, "\(started.text)")

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
}
