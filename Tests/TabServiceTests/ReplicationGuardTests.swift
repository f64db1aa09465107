import Foundation
import TabDelivery
import TabServiceTestSupport
import TabTestSupport
import Testing

/// A guarded rollout across two replicas on one PostgreSQL: the apps' reports split between them add to the same
/// counts, and the guard that trips is recorded once (one history line, one audit entry), whichever replica saw the
/// tipping report.
extension ReplicationTests {
    @Test(.enabled(if: ReplicationTests.enabled))
    func reportsSplitAcrossTwoReplicasRollBackExactlyOnce() async throws {
        let (a, b) = try await Self.twoReplicas()
        defer {
            a.kill9()
            b.kill9()
        }
        try await startRollout(
            a.port, "guarded",
            plan:
                #"{"version": 2, "percent": 50, "seed": "guarded", "guard": {"kind": "tabFailed", "maxRatio": 2, "minInstalls": 20, "minFailures": 10, "action": "rollback"}}"#
        )
        // B serves the rollout (it learns of it from the store's notification) before it is sent reports.
        let learning = ContinuousClock.now
        while ContinuousClock.now - learning < .seconds(3) {
            let onB = try await HTTPTestClient(port: b.port).send("GET", "/v1/accounts/guarded/tabs", headers: [("X-Install-Id", "i-0")])
            if onB.header("Vary")?.contains("X-Install-Id") == true { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        func report(_ port: UInt16, _ install: String, _ reports: String) async throws {
            let answer = try await HTTPTestClient(port: port).send(
                "POST", "/v1/accounts/guarded/tabs/reports", headers: [("Content-Type", "application/json")],
                body: Array(#"{"installId": "\#(install)", "reports": [\#(reports)]}"#.utf8))
            #expect(answer.status == 202, "\(answer.text)")
        }
        let stable = GuardedRolloutLiveTests.installs(30, candidate: false)
        let candidate = GuardedRolloutLiveTests.installs(30, candidate: true)
        for (index, install) in stable.enumerated() {
            try await report(index % 2 == 0 ? a.port : b.port, install, #"{"version": 1, "kind": "rendered"}"#)
        }
        for (index, install) in candidate.enumerated() {
            try await report(index % 2 == 0 ? b.port : a.port, install, #"{"version": 2, "kind": "rendered"}"#)
        }
        // Ten failing candidate installs, their reports alternating between the replicas: five on each.
        for (index, install) in candidate.prefix(10).enumerated() {
            try await report(index % 2 == 0 ? a.port : b.port, install, #"{"version": 2, "kind": "tabFailed", "tab": "t1"}"#)
        }
        let deadline = ContinuousClock.now + .seconds(3)
        var states: [String?] = []
        repeat {
            try await Task.sleep(for: .milliseconds(100))
            states = []
            for port in [a.port, b.port] {
                let read = try await HTTPTestClient(port: port).send(
                    "GET", "/v1/accounts/guarded/layout/rollout", headers: ServiceHarness.admin())
                states.append(read.json?["state"] as? String)
            }
        } while states != ["rolledBack", "rolledBack"] && ContinuousClock.now < deadline
        #expect(states == ["rolledBack", "rolledBack"], "both replicas: \(states)")
        // Both replicas' stepper loops had the counts in view; one recorded the rollback.
        try await Task.sleep(for: .milliseconds(600))
        let audit = try await HTTPTestClient(port: b.port).send(
            "GET", "/v1/audit?account=guarded&limit=100", headers: ServiceHarness.admin())
        let entries = (audit.json?["entries"] as? [[String: Any]]) ?? []
        let rollbacks = entries.filter { $0["action"] as? String == "rollout.rolledBack" }
        #expect(rollbacks.count == 1 && rollbacks.first?["actor"] as? String == "tabserver", "\(entries)")
        let read = try await HTTPTestClient(port: a.port).send(
            "GET", "/v1/accounts/guarded/layout/rollout", headers: ServiceHarness.admin())
        let health = read.json?["health"] as? [String: [String: Any]]
        #expect(health?["candidate"]?["failed"] as? Int == 10 && health?["stable"]?["installs"] as? Int == 30, "\(read.text)")
    }
}
