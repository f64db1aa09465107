import Testing

@testable import TabDelivery

/// `POST /v1/alerts`: Alertmanager's webhook payload (version 4) and the rollbacks its firing alerts order.
@Suite struct AlertmanagerTests {
    let now = time("2026-11-25T16:00:00Z")

    /// A payload shaped as Alertmanager's webhook notifier sends it (every member of version 4).
    func payload(_ alerts: String) -> [UInt8] {
        bytes(
            #"""
            {"receiver": "tabserver", "status": "firing", "alerts": [\#(alerts)],
             "groupLabels": {"alertname": "TabCrashRate"}, "commonLabels": {"alertname": "TabCrashRate"},
             "commonAnnotations": {}, "externalURL": "http://alertmanager.example:9093", "version": "4",
             "groupKey": "{}:{alertname=\"TabCrashRate\"}", "truncatedAlerts": 0}
            """#)
    }

    func alert(_ status: String, labels: String, summary: String? = nil) -> String {
        let annotations = summary.map { #"{"summary": "\#($0)", "description": "from the app's crash reports"}"# } ?? "{}"
        return #"""
            {"status": "\#(status)", "labels": {\#(labels)}, "annotations": \#(annotations),
             "startsAt": "2026-11-25T15:58:30.123Z", "endsAt": "0001-01-01T00:00:00Z",
             "generatorURL": "http://prometheus.example:9090/graph?g0.expr=tab_crash_rate", "fingerprint": "1a30ba71cca2921f"}
            """#
    }

    @Test func aFiringAlertWithAnAccountOrdersARollbackWithItsNameAndSummary() throws {
        let decoded = try AlertmanagerPayload.decode(
            payload(
                alert(
                    "firing", labels: #""alertname": "TabCrashRate", "account": "jack", "severity": "page""#, summary: "crash rate above 2%"
                )))
        #expect(decoded.rollbackOrders == [RollbackOrder(account: "jack", environment: nil, reason: "TabCrashRate: crash rate above 2%")])
    }

    @Test func theNotificationIsNamedForTheLog() throws {
        let decoded = try AlertmanagerPayload.decode(payload(alert("firing", labels: #""account": "jack""#)))
        #expect(decoded.receiver == "tabserver")
        #expect(decoded.groupKey == #"{}:{alertname="TabCrashRate"}"#)
        #expect(decoded.truncatedAlerts == 0)
        #expect(decoded.alerts.first?.fingerprint == "1a30ba71cca2921f")
        #expect(decoded.alerts.first?.startsAt == time("2026-11-25T15:58:30.123Z"))
    }

    @Test func aReasonKeepsNoControlOrBidiCharacters() throws {
        // A newline, an escape, a right-to-left override and a zero-width joiner, as JSON escapes.
        let decoded = try AlertmanagerPayload.decode(
            payload(
                alert(
                    "firing", labels: #""alertname": "Crash\u001b[2J", "account": "jack""#,
                    summary: #"rate\n\u202Eup\u200D 2%\u2029"#)))
        #expect(decoded.rollbackOrders.first?.reason == "Crash[2J: rateup 2%")
    }

    @Test func aLongSummaryIsCutToTheLengthOfAReason() throws {
        let long = String(repeating: "crash ", count: 400)
        let decoded = try AlertmanagerPayload.decode(
            payload(alert("firing", labels: #""alertname": "A", "account": "jack""#, summary: long)))
        let reason = try #require(decoded.rollbackOrders.first?.reason)
        #expect(reason.unicodeScalars.count == RollbackRequest.maximumReasonLength)
        #expect(reason.hasPrefix("A: crash crash") && reason.hasSuffix("…"))
    }

    @Test func resolvedAlertsAndAlertsWithoutAnAccountOrderNothing() throws {
        let decoded = try AlertmanagerPayload.decode(
            payload(
                alert("resolved", labels: #""alertname": "TabCrashRate", "account": "jack""#) + ","
                    + alert("firing", labels: #""alertname": "DiskFull", "instance": "db1""#)))
        #expect(decoded.alerts.count == 2)
        #expect(decoded.rollbackOrders.isEmpty)
    }

    @Test func theEnvironmentLabelNarrowsTheOrderToRunningAndPausedRollouts() throws {
        let staging = EnvironmentName("staging")!
        let production = try RolloutFixture.running(at: now)
        let paused = try RolloutFixture.running(at: now).patched(RolloutPatch(paused: true), at: now).rollout
        var context = RolloutFixture.context(at: now, id: 2)
        context.environment = staging
        let inStaging = try Rollout.start(RolloutPlan.decode(bytes(RolloutFixture.steps), now: now), in: context).rollout
        let scheduled = try RolloutFixture.start(#"{"version": 5, "percent": 5, "startAt": "2026-11-26T00:00:00Z"}"#, at: now, id: 3)
            .rollout
        let ended = try RolloutFixture.running(at: now).rolledBack(reason: nil, at: now).rollout
        let decoded = try AlertmanagerPayload.decode(
            payload(
                alert("firing", labels: #""alertname": "A", "account": "jack", "environment": "production""#, summary: "first") + ","
                    + alert("firing", labels: #""alertname": "B", "account": "jack", "environment": "production""#, summary: "second")))
        let chosen = decoded.rollbacks(among: [production, inStaging, scheduled, ended], at: now)
        #expect(chosen.map(\.rollout.id) == [1])
        #expect(chosen.map(\.reason) == ["A: first"])
        #expect(decoded.rollbacks(among: [paused], at: now).count == 1)
        let everywhere = try AlertmanagerPayload.decode(payload(alert("firing", labels: #""account": "jack""#)))
        #expect(everywhere.rollbacks(among: [production, inStaging], at: now).map(\.rollout.id) == [1, 2])
        #expect(everywhere.rollbackOrders.first?.reason == "alert without a name")
        let back = try production.rolledBack(reason: chosen[0].reason, at: now)
        #expect(back.transitions.first?.reason == "A: first")
    }

    @Test(arguments: [
        (#"{"hello": "world"}"#, ["", ""]),
        (#"{"version": "3", "alerts": []}"#, ["/version"]),
        (#"{"version": 4, "alerts": []}"#, ["/version"]),
        (#"{"version": "4"}"#, [""]),
        (#"{"version": "4", "alerts": {}}"#, ["/alerts"]),
        (#"{"version": "4", "alerts": [{"labels": {}}]}"#, ["/alerts/0/status"]),
        (#"{"version": "4", "alerts": [{"status": "pending", "labels": {}}]}"#, ["/alerts/0/status"]),
        (#"{"version": "4", "alerts": [{"status": "firing"}]}"#, ["/alerts/0/labels"]),
        (#"{"version": "4", "alerts": [{"status": "firing", "labels": {"account": 7}}]}"#, ["/alerts/0/labels/account"]),
        (#"{"version": "4", "alerts": [{"status": "firing", "labels": {}, "annotations": []}]}"#, ["/alerts/0/annotations"]),
        (#"{"version": "4", "alerts": [3]}"#, ["/alerts/0"]),
        (#"{"version": "4", "alerts": [], "receiver": 5}"#, ["/receiver"]),
        (#"{"version": "4", "alerts": [], "truncatedAlerts": -1}"#, ["/truncatedAlerts"]),
        (#"{"version": "4", "alerts": [{"status": "firing", "labels": {}, "fingerprint": 1}]}"#, ["/alerts/0/fingerprint"]),
        ("not json", [""]),
    ])
    func aPayloadThatIsNotAlertmanagersIs422(json: String, expected: [String]) {
        let error = failure { try AlertmanagerPayload.decode(bytes(json)) }
        #expect(error?.status == 422)
        #expect(pointers(error) == expected, "\(json): \(String(describing: error))")
    }

    @Test func aHugePayloadIs413() {
        let many = Array(repeating: alert("firing", labels: #""account": "jack""#), count: 5_000).joined(separator: ",")
        #expect(failure { try AlertmanagerPayload.decode(payload(many)) } == .tooLarge(limit: AlertmanagerPayload.maximumBodyBytes))
    }
}
