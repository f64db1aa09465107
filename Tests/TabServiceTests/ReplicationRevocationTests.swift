import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

/// A revocation through one replica is served by the other (PostgreSQL's LISTEN/NOTIFY), and un-revoked the same way.
@Suite(.serialized) struct ReplicationRevocationTests {
    /// Polls `url` on `port` until `done` holds, for at most `seconds`.
    func eventually(_ port: UInt16, _ path: String, seconds: Double = 3, _ done: (HTTPTestClient.Response) -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if done(try await HTTPTestClient(port: port).send("GET", path)) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    @Test(.enabled(if: ReplicationTests.enabled))
    func aRevocationThroughOneReplicaIsServedByTheOther() async throws {
        let (a, b) = try await ReplicationTests.twoReplicas()
        defer { a.kill9() }
        defer { b.kill9() }
        let replication = ReplicationTests()
        let first = try await replication.put(a.port, "shared-revoke", ["one"])
        let second = try await replication.put(a.port, "shared-revoke", ["one", "two"], ifMatch: first.header("ETag"))
        #expect(second.status == 200)
        #expect(try await eventually(b.port, "/v1/accounts/shared-revoke/tabs?version=1") { $0.status == 200 })

        let revoked = try await HTTPTestClient(port: a.port).send(
            "POST", "/v1/accounts/shared-revoke/layout/versions/1/revoke",
            headers: ServiceHarness.admin([("Content-Type", "application/json")]), body: Array(#"{"reason": "bad"}"#.utf8))
        #expect(revoked.status == 200, "\(revoked.text)")
        #expect(try await eventually(b.port, "/v1/accounts/shared-revoke/tabs?version=1") { $0.status == 410 }, "within a second or so")
        #expect(try await eventually(b.port, "/v1/accounts/shared-revoke/tabs") { $0.header("Tabs-Revoked") == "1" })

        let back = try await HTTPTestClient(port: b.port).send(
            "DELETE", "/v1/accounts/shared-revoke/layout/versions/1/revoke", headers: ServiceHarness.admin())
        #expect(back.status == 200)
        #expect(try await eventually(a.port, "/v1/accounts/shared-revoke/tabs?version=1") { $0.status == 200 })
        #expect(try await eventually(a.port, "/v1/accounts/shared-revoke/tabs") { $0.status == 200 && $0.header("Tabs-Revoked") == nil })
    }
}
