import TabDelivery
import TabStore
import Testing

@testable import TabService

/// Which arm of a rollout answers an install, and that the answer is counted in that arm.
@Suite struct ServedRolloutTests {
    let snapshots = SnapshotTests()
    let t0 = Timestamp(unixMillis: 1_700_000_000_000)

    /// `roll` at version 1 with a rollout of version 2 to every install from `startAt`, and `other` at version 1.
    func rolling(startAt: Timestamp) throws -> Snapshot {
        let stable = snapshots.record("roll", version: 1, snapshots.layout("one"))
        let candidate = snapshots.record("roll", version: 2, snapshots.layout("two"))
        let other = snapshots.record("other", version: 1, snapshots.layout("o"))
        let before = Snapshot.build(layouts: [stable, other], strings: [], budget: VariantBudget(limit: .max), logger: snapshots.logger)
        let rollout = try Rollout.start(
            RolloutPlan(version: 2, schedule: .fixed(Percent(100)!), startAt: startAt),
            in: RolloutStartContext(
                account: "roll", environment: .production, id: 1, current: Pointer(version: 1, etag: stable.etag), latest: nil,
                precondition: .ifMatch([stable.etag]), now: t0, availability: { _ in .available })
        ).rollout
        return before.serving(rollout, account: "roll", candidate: candidate, counts: ArmCounts(), logger: snapshots.logger)
    }

    @Test func anAnswerIsCountedInTheArmItWasChosenInWithOneClockRead() throws {
        let startAt = t0.adding(milliseconds: 60_000)
        let snapshot = try rolling(startAt: startAt)
        // A clock that crosses the start between two reads: a second read would pick the other arm.
        var readings = [startAt.adding(milliseconds: -1), startAt.adding(milliseconds: 1)]
        var reads = 0
        func clock() -> Timestamp {
            reads += 1
            return readings.removeFirst()
        }
        let install = try InstallID("install-1")

        let before = try #require(snapshot.entry(for: "roll", install: install, at: clock()))
        #expect(reads == 1)
        #expect(before.rollout?.arm == .stable && before.entry.resolved.tabs.map(\.id) == ["one"])
        before.countServed()
        let counts = try #require(before.rollout?.served.counts)
        #expect(counts.served == ServedCounts(candidate: 0, stable: 1))

        let after = try #require(snapshot.entry(for: "roll", install: install, at: clock()))
        #expect(reads == 2)
        #expect(after.rollout?.arm == .candidate && after.entry.resolved.tabs.map(\.id) == ["two"])
        after.countServed()
        #expect(counts.served == ServedCounts(candidate: 1, stable: 1))
    }

    @Test func anAccountWithoutARolloutIsChosenWithoutReadingTheClock() throws {
        let snapshot = try rolling(startAt: t0)
        var reads = 0
        func clock() -> Timestamp {
            reads += 1
            return t0
        }
        let other = try #require(snapshot.entry(for: "other", install: try InstallID("install-1"), at: clock()))
        #expect(other.rollout == nil && other.entry.resolved.tabs.map(\.id) == ["o"])
        #expect(reads == 0)
        other.countServed()
        #expect(snapshot.contents.rollouts["roll"]?.counts.served == ServedCounts(candidate: 0, stable: 0))
    }
}
