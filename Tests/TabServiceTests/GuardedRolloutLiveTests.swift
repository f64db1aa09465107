import Foundation
import TabDelivery
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// The apps' reports and the guarded rollout over a real socket: the server decides each install's arm, counts an
/// install once per kind and tab, ignores a report into the other arm's version, and the guard rolls back within two
/// seconds of the tipping report, once, as `tabserver`; the same share failing in both arms does not trip it.
@Suite struct GuardedRolloutLiveTests {
    static let json = [("Content-Type", "application/json")]
    static let seed = "guarded"

    /// `count` install ids of one arm at 50%.
    static func installs(_ count: Int, candidate: Bool) -> [String] {
        (0..<10_000).lazy.map { "install-\($0)" }.filter { (Bucket.of(installID: $0, seed: seed) < 5000) == candidate }.prefix(count).map {
            $0
        }
    }

    static func report(_ client: HTTPTestClient, _ install: String, _ reports: [String]) async throws -> HTTPTestClient.Response {
        let body = #"{"installId": "\#(install)", "reports": [\#(reports.joined(separator: ", "))]}"#
        return try await client.send("POST", "/v1/accounts/roll/tabs/reports", headers: json, body: Array(body.utf8))
    }

    static func rendered(_ version: Int) -> String { #"{"version": \#(version), "kind": "rendered"}"# }
    static func failed(_ version: Int, _ tab: String = "t1") -> String {
        #"{"version": \#(version), "kind": "tabFailed", "tab": "\#(tab)"}"#
    }

    /// A 50% rollout of version 2 with `guard`.
    static func guarded(_ harness: ServiceHarness, guard rule: String) async throws {
        let etag = try await RolloutLiveTests.staged(harness)
        let started = try await RolloutLiveTests.startRollout(
            harness, #"{"version": 2, "percent": 50, "seed": "\#(seed)", "guard": \#(rule)}"#, etag: etag)
        #expect(started.status == 201, "\(started.text)")
        #expect((started.json?["guard"] as? [String: Any])?["action"] as? String == "rollback", "\(started.text)")
    }

    static func rollout(_ harness: ServiceHarness) async throws -> [String: Any] {
        try #require(try await harness.client().send("GET", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin()).json)
    }

    @Test func theGuardRollsBackWhenTheCandidatesTabFailsAndOnlyOnce() async throws {
        let harness = try await ServiceHarness(reportInstallsPerAddress: 0)
        try await Self.guarded(
            harness, guard: #"{"kind": "tabFailed", "maxRatio": 2, "minInstalls": 20, "minFailures": 20, "action": "rollback"}"#)
        let client = harness.client()
        let stable = Self.installs(60, candidate: false)
        let candidate = Self.installs(60, candidate: true)
        for install in stable {
            let answer = try await Self.report(client, install, [Self.rendered(1)])
            #expect(answer.status == 202 && answer.json?["accepted"] as? Int == 1, "\(answer.text)")
        }
        // One stable install fails the same tab; repeats count once.
        for _ in 0..<3 { _ = try await Self.report(client, stable[0], [Self.failed(1)]) }
        // A report into the other arm's version is ignored.
        let forged = try await Self.report(client, stable[1], [Self.failed(2), Self.failed(2, "t0")])
        #expect(forged.status == 202 && forged.json?["accepted"] as? Int == 0 && forged.json?["ignored"] as? Int == 2, "\(forged.text)")
        for install in candidate {
            #expect(try await Self.report(client, install, [Self.rendered(2)]).status == 202)
        }
        // 19 failing candidate installs are under the rule's minFailures; the 20th tips it.
        for install in candidate.prefix(19) {
            for _ in 0..<2 { _ = try await Self.report(client, install, [Self.failed(2)]) }
        }
        try await Task.sleep(for: .milliseconds(600))
        #expect(try await Self.rollout(harness)["state"] as? String == "running", "19 failing installs hold")
        _ = try await Self.report(client, candidate[19], [Self.failed(2)])
        let deadline = ContinuousClock.now + .seconds(2)
        var state = try await Self.rollout(harness)["state"] as? String
        while state != "rolledBack", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            state = try await Self.rollout(harness)["state"] as? String
        }
        #expect(state == "rolledBack", "rolled back within 2 s of the tipping report")
        let read = try await Self.rollout(harness)
        let health = try #require(read["health"] as? [String: [String: Any]])
        #expect(health["candidate"]?["installs"] as? Int == 60 && health["candidate"]?["failed"] as? Int == 20, "\(health)")
        #expect(health["stable"]?["installs"] as? Int == 60 && health["stable"]?["failed"] as? Int == 1, "repeats count once: \(health)")
        #expect((health["candidate"]?["byTab"] as? [String: Int])?["t1"] == 20)
        let history = try #require(read["history"] as? [[String: Any]])
        let rollbacks = history.filter { $0["change"] as? String == "rolledBack" }
        #expect(rollbacks.count == 1 && rollbacks.first?["author"] as? String == "tabserver", "\(history)")
        let reason = rollbacks.first?["reason"] as? String ?? ""
        #expect(
            reason.contains("tabFailed") && reason.contains("t1") && reason.contains("20 of 60") && reason.contains("1 of 60"), "\(reason)")
        // Later reports change nothing: the rollout ended once.
        _ = try await Self.report(client, candidate[30], [Self.failed(2)])
        try await Task.sleep(for: .milliseconds(600))
        let again = try await Self.rollout(harness)
        #expect((again["history"] as? [[String: Any]])?.filter { $0["change"] as? String == "rolledBack" }.count == 1)
        let audit = try await client.send("GET", "/v1/audit?actor=tabserver", headers: ServiceHarness.admin())
        #expect(audit.text.contains("rollout.rolledBack"), "\(audit.text)")
        let metrics = try await client.send("GET", "/metrics")
        #expect(
            metrics.text.contains(
                #"tabserver_client_report_installs{account="roll",environment="production",arm="candidate",kind="tabFailed"} 20"#))
        #expect(
            metrics.text.contains(
                #"tabserver_client_reports_total{account="roll",environment="production",arm="stable",kind="rendered"} 60"#))
    }

    @Test func theSameShareFailingInBothArmsDoesNotTrip() async throws {
        let harness = try await ServiceHarness(reportInstallsPerAddress: 0)
        try await Self.guarded(
            harness, guard: #"{"kind": "failures", "maxRatio": 2, "minInstalls": 10, "minFailures": 5, "action": "rollback"}"#)
        let client = harness.client()
        for (index, install) in Self.installs(30, candidate: false).enumerated() {
            _ = try await Self.report(client, install, index < 10 ? [Self.rendered(1), Self.failed(1)] : [Self.rendered(1)])
        }
        for (index, install) in Self.installs(30, candidate: true).enumerated() {
            _ = try await Self.report(client, install, index < 10 ? [Self.rendered(2), Self.failed(2)] : [Self.rendered(2)])
        }
        try await Task.sleep(for: .milliseconds(1200))
        let read = try await Self.rollout(harness)
        #expect(read["state"] as? String == "running", "A/A: a third failing in each arm")
        #expect((read["health"] as? [String: [String: Any]])?["candidate"]?["failed"] as? Int == 10)
    }

    @Test func badReportsAreRefusedWithTheirPointerAndNothingCounted() async throws {
        let harness = try await ServiceHarness()
        try await Self.guarded(harness, guard: #"{"kind": "tabFailed", "maxRate": 0.1, "action": "rollback"}"#)
        let client = harness.client()
        let install = Self.installs(1, candidate: true)[0]
        let missingTab = try await Self.report(client, install, [Self.rendered(2), #"{"version": 2, "kind": "tabFailed"}"#])
        #expect(missingTab.status == 422 && missingTab.text.contains("/reports/1"), "\(missingTab.text)")
        let badKind = try await Self.report(client, install, [#"{"version": 2, "kind": "crashed"}"#])
        #expect(badKind.status == 422 && badKind.text.contains("/reports/0/kind"), "\(badKind.text)")
        let long = try await Self.report(
            client, install, [#"{"version": 2, "kind": "refused", "reason": "\#(String(repeating: "x", count: 201))"}"#])
        #expect(long.status == 422 && long.text.contains("/reports/0/reason"))
        let many = try await Self.report(client, install, Array(repeating: Self.rendered(2), count: 51))
        #expect(many.status == 422 && many.text.contains("/reports"))
        let big = try await client.send(
            "POST", "/v1/accounts/roll/tabs/reports", headers: Self.json, body: Array(repeating: UInt8(ascii: " "), count: 17 * 1024))
        #expect(big.status == 413)
        let plain = try await client.send(
            "POST", "/v1/accounts/roll/tabs/reports", headers: [("Content-Type", "text/plain")], body: Array("{}".utf8))
        #expect(plain.status == 415)
        let notJSON = try await client.send("POST", "/v1/accounts/roll/tabs/reports", headers: Self.json, body: Array("{".utf8))
        #expect(notJSON.status == 422 || notJSON.status == 400)
        let unknown = try await client.send(
            "POST", "/v1/accounts/roll/tabs/reports?environment=nowhere", headers: Self.json,
            body: Array(#"{"installId":"a","reports":[]}"#.utf8))
        #expect(unknown.status == 404)
        let read = try await Self.rollout(harness)
        #expect((read["health"] as? [String: [String: Any]])?["candidate"]?["installs"] as? Int == 0, "nothing counted")
    }

    @Test func anAddressMayBringInOnlySoManyInstalls() async throws {
        let harness = try await ServiceHarness(reportInstallsPerAddress: 3)
        try await Self.guarded(harness, guard: #"{"kind": "tabFailed", "maxRate": 0.5, "action": "rollback"}"#)
        let client = harness.client()
        let installs = Self.installs(4, candidate: true)
        for install in installs.prefix(3) { #expect(try await Self.report(client, install, [Self.rendered(2)]).status == 202) }
        #expect(try await Self.report(client, installs[0], [Self.rendered(2)]).status == 202, "an install already seen")
        let fourth = try await Self.report(client, installs[3], [Self.rendered(2)])
        #expect(fourth.status == 429 && fourth.header("Retry-After") != nil, "\(fourth.text)")
    }

    @Test func outsideARolloutAReportCountsToItsVersion() async throws {
        let harness = try await ServiceHarness()
        _ = try await RolloutLiveTests.staged(harness)
        let client = harness.client()
        let answer = try await Self.report(client, "someone", [Self.rendered(1), Self.failed(1, "t0"), Self.rendered(9)])
        #expect(answer.json?["accepted"] as? Int == 2 && answer.json?["ignored"] as? Int == 1, "\(answer.text)")
        let health = try await client.send("GET", "/v1/accounts/roll/layout/health?version=1", headers: ServiceHarness.admin())
        #expect(health.status == 200, "\(health.text)")
        let version = (health.json?["version"] as? [String: Any])
        #expect(version?["installs"] as? Int == 1 && version?["failed"] as? Int == 1, "\(health.text)")
    }
}
