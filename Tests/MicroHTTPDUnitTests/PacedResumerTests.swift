import Dispatch
import Foundation
import MicroHTTPD
import Synchronization
import TabTestSupport
import Testing

/// The paced resumer alone: a queue of items owned by the test, a consumer that picks them up on a thread of its own.
@Suite struct PacedResumerTests {
    /// What the test's owner saw: items still queued, resumed and not yet picked up, the most of those at once, and
    /// every limit the resumer asked for.
    struct Ledger {
        var queued = 0
        var unpicked = 0
        var mostUnpicked = 0
        var resumed = 0
        var limits: [Int] = []
        /// Resumed items waiting for the consumer.
        var toPick = 0
    }

    /// The owner: resumes up to `limit` of its queued items (they wait for the consumer then).
    final class Owner: Sendable {
        let ledger = Mutex(Ledger())

        func add(_ count: Int) { ledger.withLock { $0.queued += count } }

        func resume(limit: Int) -> (resumed: Int, more: Bool) {
            ledger.withLock { ledger in
                let taken = min(limit, ledger.queued)
                ledger.queued -= taken
                ledger.unpicked += taken
                ledger.mostUnpicked = max(ledger.mostUnpicked, ledger.unpicked)
                ledger.resumed += taken
                ledger.toPick += taken
                ledger.limits.append(limit)
                return (taken, ledger.queued > 0)
            }
        }

        /// Takes one resumed item for the consumer, if any.
        func pick() -> Bool {
            ledger.withLock { ledger in
                guard ledger.toPick > 0 else { return false }
                ledger.toPick -= 1
                ledger.unpicked -= 1
                return true
            }
        }

        var snapshot: Ledger { ledger.withLock { $0 } }
    }

    /// Picks up every resumed item on a thread of its own (`pause` microseconds each) until `done`.
    final class Consumer: Sendable {
        let done = Atomic<Bool>(false)

        init(_ owner: Owner, _ resumer: PacedResumer, pause: UInt32 = 20) {
            Thread { [self] in
                while !self.done.load(ordering: .relaxed) {
                    if owner.pick() {
                        usleep(pause)
                        resumer.pickedUp()
                    } else {
                        usleep(100)
                    }
                }
            }.start()
        }

        func stop() { done.store(true, ordering: .relaxed) }
    }

    @Test func everyItemIsResumedAndNoMoreThanASliceIsEverUnpicked() async throws {
        let owner = Owner()
        // A patience far beyond the test: a slice is never sent early, so the bound below holds on a loaded machine.
        let resumer = PacedResumer(name: "test-paced", slice: 50, patienceSeconds: 30) { owner.resume(limit: $0) }
        let consumer = Consumer(owner, resumer)
        defer { consumer.stop() }
        owner.add(5_000)
        resumer.ready()
        #expect(try await eventually(seconds: 30) { owner.snapshot.resumed == 5_000 })
        #expect(try await eventually(seconds: 30) { owner.snapshot.unpicked == 0 })
        let ledger = owner.snapshot
        #expect(ledger.mostUnpicked <= 50, "\(ledger.mostUnpicked) resumed and unpicked at once, slice 50")
        #expect(ledger.limits.allSatisfy { $0 >= 1 && $0 <= 50 })
        let counted = resumer.counted
        #expect(counted.resumed == 5_000 && counted.impatient == 0 && counted.unpaced == 0)
        #expect(counted.slices >= 5_000 / 50, "\(counted.slices) slices")
        #expect(counted.mostOutstanding <= 50)
    }

    @Test func aConsumerThatPicksNothingUpSlowsTheSlicesWithoutStoppingThem() async throws {
        let owner = Owner()
        let resumer = PacedResumer(name: "test-stalled", slice: 10, patienceSeconds: 0.02) { owner.resume(limit: $0) }
        owner.add(60)
        let started = now()
        resumer.ready()
        #expect(try await eventually(seconds: 10) { owner.snapshot.resumed == 60 })
        let counted = resumer.counted
        // Each slice after the first waited out the patience: it was counted as gone, and the next one went.
        #expect(counted.impatient >= 5, "\(counted.impatient) slices sent after the patience")
        #expect(now() - started >= 0.1)
        #expect(owner.snapshot.limits.allSatisfy { $0 <= 10 })
    }

    @Test func workQueuedLaterIsResumedAndTheThreadEndsWhenIdle() async throws {
        let owner = Owner()
        let resumer = PacedResumer(name: "test-idle", slice: 8, patienceSeconds: 30, idleSeconds: 0.05) { owner.resume(limit: $0) }
        let consumer = Consumer(owner, resumer)
        defer { consumer.stop() }
        owner.add(20)
        resumer.ready()
        #expect(try await eventually(seconds: 10) { owner.snapshot.resumed == 20 })
        #expect(try await eventually(seconds: 10) { !resumer.isRunning })  // the thread ends after 50 ms without work
        owner.add(20)
        resumer.ready()
        #expect(try await eventually(seconds: 10) { owner.snapshot.resumed == 40 })
        #expect(resumer.counted.threads == 2)
    }

    @Test func theSliceIsAskedBeforeEachSlice() async throws {
        let owner = Owner()
        let size = Atomic<Int>(4)
        let resumer = PacedResumer(name: "test-grows", slice: { size.load(ordering: .relaxed) }, patienceSeconds: 30) {
            owner.resume(limit: $0)
        }
        let consumer = Consumer(owner, resumer)
        defer { consumer.stop() }
        owner.add(100)
        resumer.ready()
        #expect(try await eventually(seconds: 10) { owner.snapshot.resumed == 100 })
        size.store(40, ordering: .relaxed)
        owner.add(400)
        resumer.ready()
        #expect(try await eventually(seconds: 10) { owner.snapshot.resumed == 500 })
        let limits = owner.snapshot.limits
        #expect(limits.prefix(25).allSatisfy { $0 <= 4 })
        #expect(limits.contains { $0 > 4 } && limits.allSatisfy { $0 <= 40 })
        #expect(resumer.counted.largestSlice == 40)
    }

    @Test func theServerSliceGrowsWithTheSuspendedConnections() {
        var configuration = HTTPServerConfiguration(resumeSliceOf: 128)
        #expect(configuration.resumeSlice(suspended: 0) == 128)
        #expect(configuration.resumeSlice(suspended: 16_384) == 128)
        #expect(configuration.resumeSlice(suspended: 100_000) == 100_000 / HTTPServerConfiguration.resumeSlicesPerWake)
        configuration.resumeSlice = 1_000
        #expect(configuration.resumeSlice(suspended: 100_000) == 1_000)
    }
}

extension HTTPServerConfiguration {
    fileprivate init(resumeSliceOf slice: Int) {
        self.init(host: "127.0.0.1", port: 0)
        resumeSlice = slice
    }
}
