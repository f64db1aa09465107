import Synchronization
import TabTestSupport
import Testing

@testable import TabService

/// The held long-polls' waits, in process: every woken wait is resumed, a slice at a time, by the wake thread; the
/// stop and the deadlines end every wait; nothing is lost.
@Suite struct ChangeWaitersTests {
    static func layoutChange(_ account: String, sequence: UInt64) -> ChangeEvent {
        ChangeEvent(
            kind: .layout, account: account, locale: nil, version: 2, etag: "\"e\"", author: "test", atMillis: 0, deleted: false,
            sequence: sequence, affected: [account])
    }

    /// Starts `count` waits of `account` (after sequence 0, until `deadline`), and returns a task that collects why
    /// each one ended once every one has.
    static func hold(
        _ waiters: ChangeWaiters, _ count: Int, account: String, until deadline: ContinuousClock.Instant = .now + .seconds(120)
    ) -> Task<[ChangeWaiters.Wake], Never> {
        Task {
            await withTaskGroup(of: ChangeWaiters.Wake.self) { group in
                for _ in 0..<count {
                    group.addTask { await waiters.wait(account: account, after: 0, until: deadline) }
                }
                var wakes: [ChangeWaiters.Wake] = []
                for await wake in group { wakes.append(wake) }
                return wakes
            }
        }
    }

    @Test func thousandsWokenByOneChangeAreAllResumedASliceAtATime() async throws {
        // A patience beyond the test: no slice goes early, so the bound below holds on a loaded machine.
        let waiters = ChangeWaiters(slice: 16, patienceSeconds: 30)
        let woken = Self.hold(waiters, 3_000, account: "jack")
        let untouched = Self.hold(waiters, 200, account: "jill")
        #expect(try await eventually(seconds: 30) { waiters.held == 3_200 })
        waiters.wake([Self.layoutChange("jack", sequence: 2)], sequence: 2)
        let wakes = await woken.value
        #expect(wakes.count == 3_000 && wakes.allSatisfy { $0 == .changed })
        #expect(waiters.held == 200 && waiters.queued == 0)
        // The pacer counts a slice once its `resume` returned, a moment after the last wait ended.
        #expect(try await eventually(seconds: 30) { waiters.paced.resumed == 3_000 })
        let paced = waiters.paced
        #expect(paced.resumed == 3_000, "\(paced)")
        #expect(paced.mostOutstanding <= 16 && paced.largestSlice == 16, "\(paced)")
        #expect(paced.slices >= 3_000 / 16 && paced.impatient == 0, "\(paced)")
        waiters.stop()
        #expect(await untouched.value.allSatisfy { $0 == .stopping })
    }

    @Test func theStopEndsEveryWaitAndEveryLaterOne() async throws {
        let waiters = ChangeWaiters(slice: 8, patienceSeconds: 30)
        let accounts = ["a", "b", "c", "d"]
        let tasks = accounts.map { Self.hold(waiters, 500, account: $0) }
        #expect(try await eventually(seconds: 30) { waiters.held == 2_000 })
        waiters.stop()
        var ended = 0
        for task in tasks {
            let wakes = await task.value
            #expect(wakes.allSatisfy { $0 == .stopping })
            ended += wakes.count
        }
        #expect(ended == 2_000 && waiters.held == 0)
        #expect(try await eventually(seconds: 30) { waiters.paced.resumed == 2_000 })
        // A wait that starts after the stop ends at once, without the wake thread.
        #expect(await waiters.wait(account: "a", after: 0, until: .now + .seconds(60)) == .stopping)
        #expect(waiters.paced.resumed == 2_000)
    }

    @Test func waitsEndAtTheirDeadlineNeverBefore() async throws {
        let waiters = ChangeWaiters(slice: 8, patienceSeconds: 30)
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(300)
        let wakes = await Self.hold(waiters, 400, account: "jack", until: deadline).value
        #expect(wakes.count == 400 && wakes.allSatisfy { $0 == .timedOut })
        #expect(ContinuousClock.now >= deadline)
        #expect(waiters.held == 0)
        // Those held when their deadline passed were ended by the sweep, through the wake thread; on a loaded machine
        // a wait that began after its deadline ended at once, without it.
        #expect(waiters.paced.resumed <= 400)
    }

    /// The sweeper sleeps until the earliest deadline: a wait that comes later with an earlier deadline wakes it
    /// sooner, and each wait still ends at its own deadline, within a tick or so, in either order.
    @Test func aLaterWaitWithAnEarlierDeadlineStillEndsOnTime() async throws {
        let waiters = ChangeWaiters()
        let started = ContinuousClock.now
        let long = Task { await waiters.wait(account: "jack", after: 0, until: started + .milliseconds(1_500)) }
        #expect(try await eventually(seconds: 30) { waiters.held == 1 })
        let shortDeadline = ContinuousClock.now + .milliseconds(300)
        #expect(await waiters.wait(account: "jill", after: 0, until: shortDeadline) == .timedOut)
        let short = ContinuousClock.now - shortDeadline
        #expect(short >= .zero && short < .milliseconds(400), "the short wait ended \(short) after its deadline")
        #expect(await long.value == .timedOut)
        let longLate = ContinuousClock.now - (started + .milliseconds(1_500))
        #expect(longLate >= .zero && longLate < .milliseconds(400), "the long wait ended \(longLate) after its deadline")
        #expect(waiters.held == 0)
        // A sweep when the short wait came, one at each deadline, one more on a loaded machine: not one every tick
        // of 1.5 s (30).
        #expect(waiters.sweeps <= 6, "\(waiters.sweeps) sweeps")
    }

    @Test func aChangeAlreadyPublishedEndsAWaitAtOnce() async throws {
        let waiters = ChangeWaiters()
        waiters.wake([Self.layoutChange("jack", sequence: 5)], sequence: 5)
        #expect(await waiters.wait(account: "jack", after: 4, until: .now + .seconds(60)) == .changed)
        #expect(waiters.held == 0 && waiters.paced.resumed == 0)
    }
}
