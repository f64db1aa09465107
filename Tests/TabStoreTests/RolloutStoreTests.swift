import Foundation
import TabDelivery
import TabJSON
import TabTime
import Testing

@testable import TabStore

/// Environment pointers, drafts and rollouts, on every backend: the write rule moves the pointer (a draft does not),
/// a rollout is recorded once per revision, and a completion moves the pointer in the same transaction.
@Suite struct RolloutStoreTests {
    static let production = TabStoreDefaults.environment

    func draft(_ account: String, _ text: String, _ precondition: WritePrecondition) -> LayoutWrite {
        var change = write(account, text, precondition)
        change.publish = false
        return change
    }

    func plan(_ version: Int, percent: Double) throws -> RolloutPlan {
        RolloutPlan(version: version, schedule: .fixed(try #require(Percent(percent))))
    }

    func start(_ store: any TabStore, _ account: String, _ plan: RolloutPlan, ifMatch: String) async throws -> RecordedRollout {
        try await store.startRollout(account: account, environment: Self.production, author: "tester", audit: nil) {
            (id, current, latest, availability) throws(RolloutError) in
            try Rollout.start(
                plan,
                in: RolloutStartContext(
                    account: account, environment: .production, id: id, current: current, latest: latest,
                    precondition: .ifMatch([ifMatch]), now: Timestamp(unixMillis: TimeSource.system.unixMillis),
                    availability: { availability[$0] ?? .missing }))
        }
    }

    @Test(arguments: Backend.available)
    func aDraftIsStoredButNotServed(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        let stored = try await store.append(draft("a", "{\"n\":2}", .ifMatch([first.etag])))
        #expect(stored.version == 2)
        #expect(try await store.currentLayouts().map(\.version) == [1], "the served version is still 1")
        #expect(try await store.pointed(account: "a", environment: Self.production)?.version == 1)
        #expect(try await store.pointers(account: "a") == [Self.production: 1])
        // A publishing write is checked against what is served (version 1), not against the draft.
        let third = try await store.append(write("a", "{\"n\":3}", .ifMatch([first.etag])))
        #expect(third.version == 3)
        #expect(try await store.currentLayouts().map(\.version) == [3])
        // Every version the environment served is kept when its pointer moves on; the draft never was.
        #expect(try await store.servedVersions(account: "a").map(\.version) == [3, 1])
        #expect(try await store.servedVersions(account: "nobody").isEmpty)
    }

    @Test(arguments: Backend.available)
    func aDraftOfANewAccountServesNothing(backend: Backend) async throws {
        let store = try backend.open()
        _ = try await store.append(draft("new", "{}", .none))
        #expect(try await store.currentLayouts().isEmpty)
        #expect(try await store.versions(account: "new").count == 1)
    }

    @Test(arguments: Backend.available)
    func aRolloutRefusesPublishingWritesUntilItEnds(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        let candidate = try await store.append(draft("a", "{\"n\":2}", .ifMatch([first.etag])))
        let started = try await start(store, "a", try plan(candidate.version, percent: 10), ifMatch: first.etag)
        #expect(started.rollout.id == 1 && started.rollout.stableVersion == 1 && started.rollout.candidateVersion == 2)
        #expect(try await store.rolloutsUnderWay().map(\.id) == [1])
        await #expect(throws: StoreError.refused(.conflict(.rolloutInProgress(id: 1, environment: Self.production)))) {
            try await store.append(write("a", "{\"n\":3}", .ifMatch([first.etag])))
        }
        _ = try await store.append(draft("a", "{\"n\":4}", .ifMatch([first.etag])))  // drafts are fine
        await #expect(throws: StoreError.refused(.conflict(.rolloutInProgress(id: 1, environment: Self.production)))) {
            try await start(store, "a", try plan(candidate.version, percent: 20), ifMatch: first.etag)
        }
        let completed = try await store.changeRollout(account: "a", environment: Self.production, author: "tester", audit: nil) {
            (rollout) throws(RolloutError) in try rollout.completed(at: Timestamp(unixMillis: TimeSource.system.unixMillis))
        }
        #expect(completed.pointed?.version == 2)
        #expect(try await store.currentLayouts().map(\.version) == [2])
        // The candidate was served from the rollout's start; the stable version before; draft 4 never.
        #expect(try await store.servedVersions(account: "a") == [2, 1].map { ServedVersion(environment: Self.production, version: $0) })
        #expect(try await store.rolloutsUnderWay().isEmpty)
        let (latest, _) = try #require(try await store.latestRollout(account: "a", environment: Self.production))
        #expect(latest.progress.ending != nil && latest.revision == 2)
    }

    @Test(arguments: Backend.available)
    func ofWritersRacingToRecordAStepExactlyOneDoes(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        let candidate = try await store.append(draft("a", "{\"n\":2}", .ifMatch([first.etag])))
        let steps = RolloutSchedule.steps([
            RolloutStep(percent: try #require(Percent(10)), hold: try ISODuration("PT0.2S")),
            RolloutStep(percent: try #require(Percent(50)), hold: try ISODuration("PT1H")),
        ])
        _ = try await start(store, "a", RolloutPlan(version: candidate.version, schedule: steps), ifMatch: first.etag)
        try await Task.sleep(for: .milliseconds(300))
        // Eight replicas' steppers find the first hold over at once; the step is recorded once.
        let recorded = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    do {
                        return try await store.changeRollout(account: "a", environment: Self.production, author: "clock", audit: nil) {
                            stored in stored.advanced(to: Timestamp(unixMillis: TimeSource.system.unixMillis))
                        }.transitions.count
                    } catch StoreError.conflict {
                        return 0
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(recorded == 1)
        let (rollout, _) = try #require(try await store.latestRollout(account: "a", environment: Self.production))
        #expect(rollout.revision == 2 && rollout.status(at: Timestamp(unixMillis: TimeSource.system.unixMillis)).step == 1)
    }

    @Test(arguments: Backend.available)
    func everyRecordedChangeIsInTheRolloutsHistoryAsItsAuthorsAtItsRevision(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        let candidate = try await store.append(draft("a", "{\"n\":2}", .ifMatch([first.etag])))
        _ = try await start(store, "a", try plan(candidate.version, percent: 10), ifMatch: first.etag)
        let raised = try await store.changeRollout(account: "a", environment: Self.production, author: "ops", audit: nil) {
            (stored) throws(RolloutError) in
            try stored.patched(RolloutPatch(percent: Percent(20), paused: true), at: Timestamp(unixMillis: TimeSource.system.unixMillis))
        }
        let back = try await store.changeRollout(account: "a", environment: Self.production, author: "alertmanager", audit: nil) {
            (stored) throws(RolloutError) in
            try stored.rolledBack(reason: "crashes", at: Timestamp(unixMillis: TimeSource.system.unixMillis))
        }
        let (stored, _) = try #require(try await store.latestRollout(account: "a", environment: Self.production))
        #expect(stored == back.rollout)
        #expect(stored.history.map(\.author) == ["tester", "ops", "ops", "alertmanager"])
        #expect(stored.history.map(\.transition.kind) == [.started, .raised, .paused, .rolledBack])
        #expect(stored.history(at: raised.rollout.revision).count == 2 && stored.history(at: stored.revision).count == 1)
        #expect(stored.history.map(\.revision) == [1, raised.rollout.revision, raised.rollout.revision, back.rollout.revision])
    }

    @Test(arguments: Backend.available)
    func aRolloutIsUpdatedOnlyWhereItsRevisionIsTheOneRead(backend: Backend) async throws {
        let store = try #require(try backend.open() as? any StoreBackend)
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        let candidate = try await store.append(draft("a", "{\"n\":2}", .ifMatch([first.etag])))
        let started = try await start(store, "a", try plan(candidate.version, percent: 10), ifMatch: first.etag).rollout
        let raised = try started.patched(RolloutPatch(percent: Percent(20)), at: Timestamp(unixMillis: TimeSource.system.unixMillis))
            .rollout
        let updates = try store.writeTransaction { (rows) throws(StoreError) in
            [try rows.update(raised, expected: started.revision), try rows.update(raised, expected: started.revision)]
        }
        #expect(updates == [true, false], "the second update read a revision that is no longer stored")
    }

    @Test(arguments: Backend.available)
    func refusalsAreTheContractsStatuses(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        await #expect(throws: StoreError.refused(.invalidBody([FieldError(pointer: "/version", message: "'a' has no version 9")]))) {
            try await start(store, "a", try plan(9, percent: 10), ifMatch: first.etag)
        }
        await #expect(throws: StoreError.refused(.preconditionFailed(current: first.etag))) {
            try await start(store, "a", try plan(1, percent: 10), ifMatch: "\"stale\"")
        }
        await #expect(throws: StoreError.notFound) {
            try await store.changeRollout(account: "a", environment: Self.production, author: "t", audit: nil) {
                (rollout) throws(RolloutError) in try rollout.completed(at: Timestamp(unixMillis: 0))
            }
        }
    }

    @Test(arguments: Backend.available)
    func servedCountsAreSummedOverReplicas(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        let candidate = try await store.append(draft("a", "{\"n\":2}", .ifMatch([first.etag])))
        let rollout = try await start(store, "a", try plan(candidate.version, percent: 50), ifMatch: first.etag).rollout
        try await store.saveServed([(rollout, ServedCounts(candidate: 3, stable: 4))], replica: "one")
        try await store.saveServed([(rollout, ServedCounts(candidate: 10, stable: 20))], replica: "two")
        try await store.saveServed([(rollout, ServedCounts(candidate: 5, stable: 6))], replica: "one")  // totals, replaced
        let (_, served) = try #require(try await store.latestRollout(account: "a", environment: Self.production))
        #expect(served == ServedCounts(candidate: 15, stable: 26))
    }

    @Test(arguments: Backend.available)
    func aDeletionMovesThePointerToItsRecord(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{\"n\":1}", .ifNoneMatchAny))
        _ = try await store.append(draft("a", "{\"n\":2}", .ifMatch([first.etag])))
        let deletion = try await store.delete(account: "a", precondition: .ifMatch([first.etag]), author: "t")
        #expect(deletion.version == 3 && deletion.deleted)
        #expect(deletion.source == Array("{\"n\":1}".utf8), "the deletion keeps the served source, not the draft's")
        #expect(try await store.currentLayouts().isEmpty)
    }
}
