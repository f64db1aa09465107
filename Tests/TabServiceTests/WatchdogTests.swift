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
}
