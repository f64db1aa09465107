import TabTime
import Testing

@testable import MicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct WatchdogTests {
    /// A clock that does not move: each sweep says when it runs.
    static let stopped = TimeSource.fixed(Timestamp(unixMillis: 1_000_000))

    /// A socket pair: the watchdog shuts one end down; the other end then reads end of stream.
    func pair() -> (watched: Int32, peer: Int32) {
        var fds: [Int32] = [0, 0]
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        return (fds[0], fds[1])
    }

    func isShutDown(_ peer: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(peer, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test func cutsOffAConnectionPastItsHeaderDeadline() {
        let (watched, peer) = pair()
        defer { close(watched); close(peer) }
        let watchdog = SlowClientWatchdog(headerDeadlineSeconds: 1, bodyDeadlineSeconds: 1, clock: Self.stopped)
        let clock = ConnectionClock(fd: watched, clock: Self.stopped)
        watchdog.opened(clock)
        watchdog.sweep(now: clock.current.since + 500_000_000)
        #expect(!isShutDown(peer), "within the deadline")
        watchdog.sweep(now: clock.current.since + 1_500_000_000)
        #expect(isShutDown(peer), "past the deadline")
        #expect(watchdog.cutOffCount.load(ordering: .relaxed) == 1)
    }

    /// A worker can stamp a phase after a sweep read the time: that connection is not overdue. (A wrapping
    /// subtraction once made it look centuries late, and healthy keep-alive connections were cut off.)
    @Test func aPhaseStampedAfterTheSweepBeganIsNotOverdue() {
        let (watched, peer) = pair()
        defer { close(watched); close(peer) }
        let watchdog = SlowClientWatchdog(headerDeadlineSeconds: 1, bodyDeadlineSeconds: 1, clock: Self.stopped)
        let clock = ConnectionClock(fd: watched, clock: Self.stopped)
        watchdog.opened(clock)
        watchdog.sweep(now: clock.current.since - 1)
        #expect(!isShutDown(peer))
        #expect(watchdog.cutOffCount.load(ordering: .relaxed) == 0)
    }

    @Test func leavesAnsweringConnectionsAlone() {
        let (watched, peer) = pair()
        defer { close(watched); close(peer) }
        let watchdog = SlowClientWatchdog(headerDeadlineSeconds: 1, bodyDeadlineSeconds: 1, clock: Self.stopped)
        let clock = ConnectionClock(fd: watched, clock: Self.stopped)
        watchdog.opened(clock)
        clock.enter(.answering)  // a slow store write is not the client's fault
        watchdog.sweep(now: clock.current.since + 10_000_000_000)
        #expect(!isShutDown(peer))
    }

    /// The thread sleeps until the earliest deadline an open connection could reach: its own, or the shortest
    /// deadline for one answering now (it may start its next request at once); with no connection, until one opens.
    @Test func theNextSweepIsDueAtTheEarliestDeadline() {
        let (watched, peer) = pair()
        defer { close(watched); close(peer) }
        let watchdog = SlowClientWatchdog(
            headerDeadlineSeconds: 1, bodyDeadlineSeconds: 2, handshakeDeadlineSeconds: 3, clock: Self.stopped)
        #expect(watchdog.sweep(now: 5_000_000_000) == nil, "no connection: nothing to sweep until one opens")
        let clock = ConnectionClock(fd: watched, clock: Self.stopped)
        watchdog.opened(clock)
        let since = clock.current.since
        #expect(watchdog.sweep(now: since + 300_000_000) == 700_000_001, "the header deadline, just past it")
        clock.enter(.receivingBody)
        #expect(watchdog.sweep(now: since + 300_000_000) == 1_000_000_001, "at most the shortest deadline")
        #expect(watchdog.sweep(now: since + 1_500_000_000) == 500_000_001, "the body deadline")
        clock.enter(.answering)
        #expect(watchdog.sweep(now: since + 9_000_000_000) == 1_000_000_001, "answering: the shortest deadline")
        watchdog.closed(clock)
        #expect(watchdog.sweep(now: since + 9_000_000_000) == nil)
        #expect(!isShutDown(peer))
    }

    /// An idle server's watchdog does not wake: its thread sweeps once, then sleeps until a connection opens; it
    /// cuts that connection off at its deadline, and sleeps again once the connection is gone.
    @Test func anIdleWatchdogSleepsUntilAConnectionOpens() async throws {
        let (watched, peer) = pair()
        defer { close(watched); close(peer) }
        let watchdog = SlowClientWatchdog(headerDeadlineSeconds: 0.3, bodyDeadlineSeconds: 1, clock: .system)
        watchdog.start()
        defer { watchdog.stop() }
        try await Task.sleep(for: .milliseconds(600))
        #expect(watchdog.threadSweeps.load(ordering: .relaxed) == 1, "a sweep at the start, none while idle")
        let clock = ConnectionClock(fd: watched, clock: .system)
        watchdog.opened(clock)
        let opened = ContinuousClock.now
        while !isShutDown(peer), ContinuousClock.now - opened < .seconds(3) { try await Task.sleep(for: .milliseconds(20)) }
        let cutOffAfter = ContinuousClock.now - opened
        #expect(isShutDown(peer) && cutOffAfter >= .milliseconds(300) && cutOffAfter < .milliseconds(1_500), "\(cutOffAfter)")
        watchdog.closed(clock)  // as libmicrohttpd reports the connection it then closes
        try await Task.sleep(for: .milliseconds(400))  // the thread's sleep (at most the shortest deadline) ends
        let parked = watchdog.threadSweeps.load(ordering: .relaxed)
        #expect(parked <= 5, "a sweep at the opening, at the deadline, and one finding none: \(parked)")
        try await Task.sleep(for: .milliseconds(600))
        #expect(watchdog.threadSweeps.load(ordering: .relaxed) == parked, "none while idle again")
    }
}
