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

    /// The schedule's clock reads the counts per state; requests that ended before the retention's start are pruned,
    /// a batch at a time, and those open, approved or ended later stay.
    @Test(arguments: Backend.available)
    func theClockCountsByStateAndEndedOnesArePrunedAfterTheirRetention(backend: Backend) async throws {
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
        let read = try await store.dueChangeRequests(atMillis: 10_000, limit: 100)
        #expect(read.due.isEmpty, "approved without an applyAt: never due, applied by hand")
        #expect(read.counts == ["open": 1, "approved": 2, "applied": 1, "rejected": 1, "cancelled": 1])
        #expect(try await store.pruneChangeRequests(finishedBefore: 10_000, limit: 1) == 1)
        #expect(try await store.pruneChangeRequests(finishedBefore: 10_000, limit: 500) == 1)
        #expect(try await store.pruneChangeRequests(finishedBefore: 10_000, limit: 500) == 0)
        #expect(try await store.changeRequests().map(\.id) == ["cr_a", "cr_b", "cr_c", "cr_f"])
    }

    /// A record with its `applyAtMillis`, in `state`.
    static func scheduled(_ id: String, _ state: String, applyAt: Int64?, created: Int64 = 1_000) -> StoredChangeRequest {
        let applyAt = applyAt.map { #","applyAtMillis":\#($0)"# } ?? ""
        return request(id, state, #"{"id":"\#(id)"\#(applyAt),"state":"\#(state)"}"#, at: created)
    }

    /// The clock reads only approved, unclaimed requests whose `applyAt` has come, earliest first and at most the limit,
    /// and the earliest `applyAt` still ahead; an open request, an approved one without `applyAt` (applied by hand),
    /// and one that ended are never due, whatever their time.
    @Test(arguments: Backend.available)
    func theClockReadsOnlyTheApprovedRequestsThatAreDue(backend: Backend) async throws {
        let store = try backend.open()
        for (id, state, at) in [
            ("cr_due2", "approved", Int64(5_000)), ("cr_due1", "approved", 4_000), ("cr_now", "approved", 10_000),
            ("cr_later", "approved", 20_000), ("cr_last", "approved", 30_000), ("cr_open", "open", 1_000),
            ("cr_claimed", "approved", 2_000),
        ] {
            try await store.create(changeRequest: Self.scheduled(id, state, applyAt: at), audit: nil, event: nil)
        }
        try await store.create(changeRequest: Self.scheduled("cr_byhand", "approved", applyAt: nil), audit: nil, event: nil)
        var ended = Self.scheduled("cr_failed", "failed", applyAt: 3_000)
        try await store.create(changeRequest: Self.scheduled("cr_failed", "approved", applyAt: 3_000), audit: nil, event: nil)
        ended.finishedAtMillis = 6_000
        #expect(try await store.update(changeRequest: ended, expecting: "approved", audit: nil, event: nil))
        #expect(try await store.claim(changeRequest: "cr_claimed", state: "approved", by: "replica-b"))

        let read = try await store.dueChangeRequests(atMillis: 10_000, limit: 100)
        #expect(read.due.map(\.id) == ["cr_due1", "cr_due2", "cr_now"])
        #expect(read.due.first == Self.scheduled("cr_due1", "approved", applyAt: 4_000), "the row as it was written")
        #expect(read.nextApplyAtMillis == 20_000)
        #expect(read.counts == ["approved": 7, "open": 1, "failed": 1])
        #expect(try await store.dueChangeRequests(atMillis: 10_000, limit: 2).due.map(\.id) == ["cr_due1", "cr_due2"])
        let early = try await store.dueChangeRequests(atMillis: 3_999, limit: 100)
        #expect(early.due.isEmpty && early.nextApplyAtMillis == 4_000)
        let late = try await store.dueChangeRequests(atMillis: 30_000, limit: 100)
        #expect(late.due.count == 5 && late.nextApplyAtMillis == nil)

        // Approving an open request dates it by its new record; a record whose time is no integer, or no JSON, is
        // never due (on every backend alike), and is no error.
        let approved = Self.scheduled("cr_open", "approved", applyAt: 7_000)
        #expect(
            try await store.update(
                changeRequest: approved, replacing: Self.scheduled("cr_open", "open", applyAt: 1_000).record, audit: nil, event: nil))
        for (id, record) in [
            ("cr_text", #"{"applyAtMillis":"5000"}"#), ("cr_real", #"{"applyAtMillis":5000.5}"#), ("cr_nojson", "applyAtMillis: 5000"),
            ("cr_array", "[5000]"),
        ] {
            try await store.create(changeRequest: Self.request(id, "approved", record), audit: nil, event: nil)
        }
        #expect(
            try await store.dueChangeRequests(atMillis: 10_000, limit: 100).due.map(\.id) == ["cr_due1", "cr_due2", "cr_open", "cr_now"])
    }
}
