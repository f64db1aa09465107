import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

/// Scheduled change requests across two replicas on one PostgreSQL: both replicas' clocks find each request due in
/// the same second, and each is applied exactly once (one new version, one `change-request.applied`, no failure).
extension ReplicationTests {
    @Test(.enabled(if: ReplicationTests.enabled))
    func twoReplicasApplyAScheduledRequestExactlyOnce() async throws {
        let (a, b) = try await Self.twoReplicas(
            environment: ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "TABSERVER_REQUIRE_APPROVAL": "production"])
        defer {
            a.kill9()
            b.kill9()
        }
        let onA = HTTPTestClient(port: a.port)
        let onB = HTTPTestClient(port: b.port)
        let made = try await onA.send(
            "POST", "/v1/tokens", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: Array(#"{"name": "reviewer", "scopes": ["approve"]}"#.utf8))
        let secret = try #require((try JSONSerialization.jsonObject(with: Data(made.body)) as? [String: Any])?["token"] as? String)
        let reviewer = [("Authorization", "Bearer \(secret)")]

        // Five requests, all due at one second, approved through the other replica.
        let formatter = ISO8601DateFormatter()
        let at = formatter.string(from: Date().addingTimeInterval(3))
        let accounts = (1...5).map { "scheduled\($0)" }
        var ids: [String: String] = [:]
        for account in accounts {
            let held = try await onA.send(
                "PUT", "/v1/accounts/\(account)/layout",
                headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-None-Match", "*"), ("Apply-At", at)]),
                body: document(["Home"]))
            #expect(held.status == 202, "\(held.text)")
            let request = (try JSONSerialization.jsonObject(with: Data(held.body)) as? [String: Any])?["changeRequest"] as? [String: Any]
            ids[account] = try #require(request?["id"] as? String)
            let approved = try await onB.send("POST", "/v1/change-requests/\(ids[account] ?? "")/approve", headers: reviewer)
            #expect(approved.status == 200, "\(approved.text)")
        }

        // Applied by one clock or the other within a second of the time; both replicas then serve it.
        let deadline = ContinuousClock.now + .seconds(8)
        var states: [String] = []
        while ContinuousClock.now < deadline {
            states = []
            for account in accounts {
                let read = try await onB.send("GET", "/v1/change-requests/\(ids[account] ?? "")", headers: reviewer)
                states.append((try JSONSerialization.jsonObject(with: Data(read.body)) as? [String: Any])?["state"] as? String ?? "?")
            }
            if states.allSatisfy({ $0 != "approved" }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(states == Array(repeating: "applied", count: accounts.count), "\(states)")
        try await Task.sleep(for: .seconds(1.5))  // a second clock tick on both replicas: nothing applies twice
        for account in accounts {
            let versions = try await onA.send("GET", "/v1/accounts/\(account)/layout/versions", headers: ServiceHarness.admin())
            let listed = (try JSONSerialization.jsonObject(with: Data(versions.body)) as? [String: Any])?["versions"] as? [[String: Any]]
            #expect(listed?.count == 2, "\(account): the held draft and one applied version, \(versions.text)")
            let audit = try await onB.send("GET", "/v1/audit?account=\(account)", headers: ServiceHarness.admin())
            #expect(audit.text.components(separatedBy: "\"change-request.applied\"").count - 1 == 1, "\(account): \(audit.text)")
            #expect(!audit.text.contains("change-request.failed"), "\(account)")
            for client in [onA, onB] {
                let tabs = try await client.send("GET", "/v1/accounts/\(account)/tabs")
                #expect((try JSONSerialization.jsonObject(with: Data(tabs.body)) as? [String: Any])?["layout"] as? String == account)
            }
        }
    }
}
