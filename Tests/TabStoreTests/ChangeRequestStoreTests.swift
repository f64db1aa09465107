import Foundation
import Testing

@testable import TabStore

/// The change-request part of the store contract, on every backend this machine has.
@Suite struct ChangeRequestStoreTests {
    static func request(_ id: String, _ state: String, _ record: String, at millis: Int64 = 1_000) -> StoredChangeRequest {
        StoredChangeRequest(id: id, state: state, record: Array(record.utf8), createdAtMillis: millis)
    }

    /// Two approvals computed from one record: the first is written, the second finds the record changed (and is
    /// computed again by the service over the new one), so neither overwrites the other.
    @Test(arguments: Backend.available)
    func aRecordIsReplacedOnlyOverTheRecordItWasComputedFrom(backend: Backend) async throws {
        let store = try backend.open()
        let opened = Self.request("cr_1", "open", #"{"approvals":[]}"#)
        try await store.create(changeRequest: opened, audit: nil, event: nil)
        try await store.create(changeRequest: Self.request("cr_2", "open", #"{"approvals":[]}"#, at: 2_000), audit: nil, event: nil)
        #expect(try await store.changeRequest(id: "cr_1") == opened)
        #expect(try await store.changeRequest(id: "cr_9") == nil)

        let byBob = Self.request("cr_1", "open", #"{"approvals":["bob"]}"#)
        let byCarol = Self.request("cr_1", "open", #"{"approvals":["carol"]}"#)
        #expect(try await store.update(changeRequest: byBob, replacing: opened.record, audit: nil, event: nil))
        #expect(try await store.update(changeRequest: byCarol, replacing: opened.record, audit: nil, event: nil) == false)
        let both = Self.request("cr_1", "approved", #"{"approvals":["bob","carol"]}"#)
        #expect(try await store.update(changeRequest: both, replacing: byBob.record, audit: nil, event: nil))
        #expect(try await store.changeRequest(id: "cr_1") == both)
        #expect(try await store.changeRequest(id: "cr_2")?.record == Array(#"{"approvals":[]}"#.utf8), "the other is untouched")
    }

    /// The schedule's clock reads the approved requests and the counts per state; requests that ended before the
    /// retention's start are pruned, a batch at a time, and those open, approved or ended later stay.
    @Test(arguments: Backend.available)
    func theClockReadsTheApprovedOnesAndEndedOnesArePrunedAfterTheirRetention(backend: Backend) async throws {
        let store = try backend.open()
        for (id, state) in [
            ("cr_a", "open"), ("cr_b", "approved"), ("cr_c", "approved"), ("cr_d", "open"), ("cr_e", "open"), ("cr_f", "open"),
        ] {
            try await store.create(changeRequest: Self.request(id, state, #"{"id":"\#(id)"}"#), audit: nil, event: nil)
        }
        for (id, state, at) in [("cr_d", "applied", Int64(5_000)), ("cr_e", "rejected", 6_000), ("cr_f", "cancelled", 50_000)] {
            var ended = Self.request(id, state, #"{"id":"\#(id)","ended":true}"#)
            ended.finishedAtMillis = at
            #expect(try await store.update(changeRequest: ended, expecting: "open", audit: nil, event: nil))
        }
        let read = try await store.approvedChangeRequests()
        #expect(read.approved.map(\.id) == ["cr_b", "cr_c"])
        #expect(read.counts == ["open": 1, "approved": 2, "applied": 1, "rejected": 1, "cancelled": 1])
        #expect(try await store.pruneChangeRequests(finishedBefore: 10_000, limit: 1) == 1)
        #expect(try await store.pruneChangeRequests(finishedBefore: 10_000, limit: 500) == 1)
        #expect(try await store.pruneChangeRequests(finishedBefore: 10_000, limit: 500) == 0)
        #expect(try await store.changeRequests().map(\.id) == ["cr_a", "cr_b", "cr_c", "cr_f"])
    }
}
