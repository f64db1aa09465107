import Dispatch
import Foundation
import Synchronization
import Testing

@testable import TabService

/// Variants are compiled and compressed one at a time on the builder's queue, never on the caller's thread, with at
/// most `perLayout` builds waiting per layout (before, 78 new variants pinned both cores for 49 s).
@Suite struct VariantBuilderTests {
    /// Counts what the builds saw: how many ran at once, and on which threads.
    final class Observed: Sendable {
        let running = Mutex(0)
        let mostAtOnce = Mutex(0)
        let callerThreads = Mutex(Set<String>())

        func enter() {
            let now = running.withLock { value -> Int in
                value += 1
                return value
            }
            mostAtOnce.withLock { $0 = max($0, now) }
        }

        func leave() { running.withLock { $0 -= 1 } }
    }

    /// The builds that ended, by index.
    final class Built: Sendable {
        let indices = Mutex(Set<Int>())
    }

    @Test func buildsRunOneAtATimeWhateverTheNumberOfCallers() async {
        let builder = VariantBuilder(perLayout: 4)
        let observed = Observed()
        let results = await withTaskGroup(of: Int?.self) { group in
            for index in 0..<24 {
                group.addTask {
                    await builder.build(layout: "layout-\(index % 8)") {
                        observed.enter()
                        usleep(2_000)
                        observed.leave()
                        return index
                    }
                }
            }
            return await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        #expect(results.compactMap { $0 }.count == 24, "8 layouts × 3 builds each stay within 4 per layout")
        #expect(observed.mostAtOnce.withLock { $0 } == 1)
    }

    @Test func aLayoutWithFourBuildsWaitingIsRefusedAndOthersAreNot() async throws {
        let builder = VariantBuilder(perLayout: 4)
        let release = DispatchSemaphore(value: 0)
        let admitted = Observed()
        let blocked = (0..<4).map { _ in
            Task {
                await builder.build(layout: "big") {
                    admitted.enter()
                    release.wait()
                    return true
                }
            }
        }
        // Four builds of "big" are queued or running: a fifth is refused at once, another layout's is queued.
        while admitted.running.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(2)) }
        let refused = await builder.build(layout: "big") { true }
        #expect(refused == nil)
        let other = Task { await builder.build(layout: "small") { true } }
        for _ in 0..<4 { release.signal() }
        for task in blocked { #expect(await task.value == true) }
        #expect(await other.value == true)
        #expect(await builder.build(layout: "big") { true } == true, "slots are given back when builds end")
    }

    @Test func requestsForABuildUnderWayWaitForItAndTakeNoSlot() async throws {
        let builder = VariantBuilder(perLayout: 4)
        let release = DispatchSemaphore(value: 0)
        let started = Observed()
        let built = Built()
        let entry = ObjectIdentifier(builder)
        @Sendable func job(_ index: Int) -> VariantBuilder.Job {
            VariantBuilder.Job(entry: entry, variant: VariantKey(locale: UInt16(index), platform: 0, versionClass: 0, format: .json))
        }
        // Four distinct builds of "big" hold its slots; the first is blocked on the queue, the others wait behind it.
        let distinct = (0..<4).map { index in
            Task {
                await builder.build(layout: "big", job: job(index)) { () -> Bool in
                    started.enter()
                    if index == 0 { release.wait() }
                    built.indices.withLock { _ = $0.insert(index) }
                    return true
                }
            }
        }
        while started.running.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(2)) }
        // Forty more requests for job 0: none refused; each runs after job 0's build, finding what it made.
        let joined = (0..<40).map { _ in
            Task { await builder.build(layout: "big", job: job(0)) { built.indices.withLock { $0.contains(0) } } }
        }
        let fifth = await builder.build(layout: "big", job: job(4)) { true }
        #expect(fifth == nil, "a fifth distinct build is still refused")
        release.signal()
        for task in distinct { #expect(await task.value == true) }
        for task in joined { #expect(await task.value == true, "a joined request runs after the build it waited for") }
        #expect(await builder.build(layout: "big", job: job(4)) { true } == true, "slots are given back when builds end")
    }
}
