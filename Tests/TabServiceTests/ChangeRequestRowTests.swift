import Foundation
import Logging
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// Change requests whose rows were written by hand into a store: over a real socket on SQLite, a command this build
/// does not know is failed with a reason naming it (by the apply route and by the clock), never guessed, and a row as
/// the previous release stored it still applies; more rows due than the clock reads at once are all applied, batch
/// after batch.
@Suite(.serialized) struct ChangeRequestRowTests {
    static func object(_ response: HTTPTestClient.Response) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    /// An approved request's record, as text (keys sorted, as the store keeps them).
    static func row(_ id: String, action: String, account: String, ifMatch: String? = nil, applyAtMillis: Int64? = nil)
        -> StoredChangeRequest
    {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var record = #"{"account":"\#(account)","action":"\#(action)","approvals":[{"atMillis":\#(now),"by":"bob"}],"#
        if let applyAtMillis { record += #""applyAtMillis":\#(applyAtMillis),"# }
        record += #""author":"alice","createdAtMillis":\#(now),"environment":"production","id":"\#(id)","#
        if let ifMatch { record += #""ifMatch":["\#(ifMatch.replacingOccurrences(of: "\"", with: "\\\""))"],"# }
        record += #""required":1,"state":"approved","updatedAtMillis":\#(now)}"#
        return StoredChangeRequest(id: id, state: "approved", record: Array(record.utf8), createdAtMillis: now)
    }

    @Test func anUnknownCommandFailsItsRequestAndAKnownOneOfThePreviousReleaseApplies() async throws {
        let store = try SQLiteStore(path: NSTemporaryDirectory() + "held-\(UUID().uuidString).sqlite")
        let harness = try await ServiceHarness(store: store, approvals: ["production"])
        defer { harness.application.stop() }
        let client = harness.client()

        // Applied by hand: failed, its reason naming the command, and the layout it named untouched.
        let before = try await client.send("GET", "/v1/accounts/jack/layout", headers: ServiceHarness.admin())
        try await store.create(
            changeRequest: Self.row("cr_00000000000000a1", action: "layout.teleport", account: "jack"), audit: nil, event: nil)
        let applied = try await client.send("POST", "/v1/change-requests/cr_00000000000000a1/apply", headers: ServiceHarness.admin())
        #expect(applied.status == 200)
        #expect(Self.object(applied)["state"] as? String == "failed")
        #expect((Self.object(applied)["reason"] as? String)?.contains("\"layout.teleport\"") == true)
        let read = try await client.send("GET", "/v1/change-requests/cr_00000000000000a1", headers: ServiceHarness.admin())
        #expect(Self.object(read)["state"] as? String == "failed")
        let after = try await client.send("GET", "/v1/accounts/jack/layout", headers: ServiceHarness.admin())
        #expect(after.status == before.status && after.header("ETag") == before.header("ETag"))

        // Due by the clock: failed the same way.
        try await store.create(
            changeRequest: Self.row("cr_00000000000000a2", action: "rollout.teleport", account: "jack", applyAtMillis: 1_000), audit: nil,
            event: nil)
        // A row written behind the server's back is not a transition it hears of: its schedule reads it at its next
        // reread, at most a period away.
        var clocked: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(Double(TabService.changeRequestRereadPeriod.components.seconds) + 5)
        while Date() < deadline, clocked["state"] as? String != "failed" {
            try await Task.sleep(for: .milliseconds(200))
            clocked = Self.object(try await client.send("GET", "/v1/change-requests/cr_00000000000000a2", headers: ServiceHarness.admin()))
        }
        #expect(clocked["state"] as? String == "failed")
        #expect((clocked["reason"] as? String)?.contains("\"rollout.teleport\"") == true)

        // A deletion held by the previous release (its record's fields as that release wrote them) applies.
        let created = try await client.send(
            "PUT", "/v1/accounts/held/layout?bypassApproval=true",
            headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-None-Match", "*")]), body: document(["Home"]))
        #expect(created.status == 201)
        let etag = try #require(created.header("ETag"))
        try await store.create(
            changeRequest: Self.row("cr_00000000000000a3", action: "layout.delete", account: "held", ifMatch: etag), audit: nil, event: nil)
        let deleted = try await client.send("POST", "/v1/change-requests/cr_00000000000000a3/apply", headers: ServiceHarness.admin())
        #expect(deleted.status == 200)
        #expect(Self.object(deleted)["state"] as? String == "applied")
        #expect(try await client.send("GET", "/v1/accounts/held/layout", headers: ServiceHarness.admin()).status == 404)
    }

    /// More requests due than one read of the schedule takes: the first read applies a full batch and asks to run again
    /// at once; the next applies the rest and has nothing ahead to wake for.
    @Test func aFullReadOfDueRequestsAsksForTheNextAtOnce() async throws {
        let store = MemoryStore()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        // No environment under review: the service's own schedule leaves the requests to the calls below.
        let service = try await TabService(
            store: store, configuration: ServiceConfiguration(adminTokens: [("tester", ServiceHarness.token)]), logger: logger)
        for n in 0...Changes.dueChangeRequestsPerRead {
            let id = String(format: "cr_%016x", n)
            try await store.create(
                changeRequest: Self.row(id, action: "layout.teleport", account: "jack", applyAtMillis: 1_000 + Int64(n)), audit: nil,
                event: nil)
        }
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let first = await service.changes.applyDueChangeRequests { _ in }
        #expect(first.map { $0 >= before } == true, "a full read: again at once, not at \(String(describing: first))")
        var counts: [String: Int] = [:]
        #expect(await service.changes.applyDueChangeRequests { counts = $0 } == nil)
        #expect(counts["approved"] == 1 && counts["failed"] == Changes.dueChangeRequestsPerRead, "counted before the second read applied")
        let after = try await store.dueChangeRequests(atMillis: .max, limit: 1_000)
        #expect(after.due.isEmpty && after.counts == ["failed": Changes.dueChangeRequestsPerRead + 1])
    }
}
