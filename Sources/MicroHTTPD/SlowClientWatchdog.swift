internal import CMicroHTTPD
import Dispatch
import Synchronization
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// Where a connection is in its current request, and since when (monotonic nanoseconds).
final class ConnectionClock: Sendable {
    enum Phase: UInt8 {
        /// Waiting for (the rest of) a header block: since the connection opened or the last answer.
        case awaitingHeaders = 0
        /// Headers in, body still arriving.
        case receivingBody = 1
        /// Request complete: the server is answering (a slow store write is not the client's fault).
        case answering = 2
        /// Already cut off.
        case cutOff = 3
        /// HTTPS: the TLS handshake, until the first request line arrives.
        case handshaking = 4
    }

    let fd: Int32
    /// Where `since` is read from (its monotonic clock).
    private let clock: TimeSource
    private let phase = Atomic<UInt8>(Phase.awaitingHeaders.rawValue)
    private let since = Atomic<UInt64>(0)

    init(fd: Int32, tls: Bool = false, clock: TimeSource) {
        self.fd = fd
        self.clock = clock
        since.store(clock.nanoseconds, ordering: .relaxed)
        if tls { phase.store(Phase.handshaking.rawValue, ordering: .relaxed) }
    }

    /// A request line arrived: a TLS handshake is over (the header deadline runs from here for the first request).
    func requestLineArrived() {
        let (exchanged, _) = phase.compareExchange(
            expected: Phase.handshaking.rawValue, desired: Phase.awaitingHeaders.rawValue, ordering: .acquiringAndReleasing)
        if exchanged { since.store(clock.nanoseconds, ordering: .relaxed) }
    }

    func enter(_ next: Phase) {
        since.store(clock.nanoseconds, ordering: .relaxed)
        phase.store(next.rawValue, ordering: .releasing)
    }

    var current: (phase: Phase, since: UInt64) {
        (Phase(rawValue: phase.load(ordering: .acquiring)) ?? .answering, since.load(ordering: .relaxed))
    }
}

/// Cuts off clients that send too slowly: a header block must be complete within `headerDeadline` of the
/// connection opening (or of the previous answer on a kept-alive connection), and a body within
/// `bodyDeadline` of its headers. libmicrohttpd 0.9.75 has only an idle timeout, which a client sending a byte
/// now and then never reaches. An offender's socket is shut down (`shutdown(2)`, not closed): libmicrohttpd
/// then sees the connection end and cleans it up on its own thread.
///
/// The watchdog's thread sleeps until the earliest deadline a connection could reach, and while no connection is
/// open it sleeps until one opens: an idle server is not woken to sweep nothing.
final class SlowClientWatchdog: Sendable {
    private struct Live {
        var connections: [ObjectIdentifier: ConnectionClock] = [:]
        /// The thread found no connection and waits on `opening` until one opens (or the watchdog stops).
        var parked = false
    }

    private let headerDeadline: UInt64
    private let bodyDeadline: UInt64
    private let handshakeDeadline: UInt64
    /// The clock deadlines are measured on (its monotonic reading); each connection's ``ConnectionClock`` reads it.
    let clock: TimeSource
    /// Live connections. libmicrohttpd reports a connection closed before it closes the socket, and sweeps
    /// hold this lock, so a socket shut down here always belongs to the connection registered with it.
    private let live = Mutex(Live())
    /// Signalled when a connection opens while the thread is parked, and at ``stop()``; also the thread's timed sleep.
    private let opening = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    let cutOffCount = Atomic<Int>(0)
    /// Sweeps the thread made (for tests: an idle server's watchdog makes none).
    let threadSweeps = Atomic<Int>(0)

    init(
        headerDeadlineSeconds: Double, bodyDeadlineSeconds: Double, handshakeDeadlineSeconds: Double = 10, clock: TimeSource
    ) {
        self.clock = clock
        headerDeadline = UInt64(headerDeadlineSeconds * 1e9)
        bodyDeadline = UInt64(bodyDeadlineSeconds * 1e9)
        handshakeDeadline = UInt64(handshakeDeadlineSeconds * 1e9)
    }

    func opened(_ clock: ConnectionClock) {
        let unpark = live.withLock { live in
            live.connections[ObjectIdentifier(clock)] = clock
            defer { live.parked = false }
            return live.parked
        }
        if unpark { opening.signal() }
    }

    func closed(_ clock: ConnectionClock) { live.withLock { $0.connections[ObjectIdentifier(clock)] = nil } }

    /// Shuts down every connection past its deadline now.
    /// - Returns: nanoseconds until the next deadline could pass; nil when no connection is open.
    @discardableResult
    func sweep() -> UInt64? { sweep(now: clock.nanoseconds) }

    /// Shuts down every connection past its deadline at `now` (monotonic nanoseconds).
    /// - Returns: nanoseconds from `now` until the next deadline could pass: the earliest of the open connections'
    ///   deadlines, and at most the shortest deadline (a connection answering now may start its next request at
    ///   once); nil when no connection is open.
    @discardableResult
    func sweep(now: UInt64) -> UInt64? { sweep(now: now, parkingWhenNone: false) }

    private func sweep(now: UInt64, parkingWhenNone park: Bool) -> UInt64? {
        live.withLock { live -> UInt64? in
            if live.connections.isEmpty {
                live.parked = park
                return nil
            }
            var next = min(headerDeadline, bodyDeadline, handshakeDeadline) + 1
            for clock in live.connections.values {
                let (phase, since) = clock.current
                let limit: UInt64
                switch phase {
                case .awaitingHeaders: limit = headerDeadline
                case .receivingBody: limit = bodyDeadline
                case .handshaking: limit = handshakeDeadline
                case .answering, .cutOff: continue
                }
                // A worker may stamp a phase after this sweep read `now`: a later `since` is not overdue
                // (a wrapping subtraction made it look ~584 years late and cut healthy connections off).
                guard now > since else { continue }
                if now - since > limit {
                    clock.enter(.cutOff)
                    shutdown(clock.fd, Int32(SHUT_RDWR))
                    cutOffCount.add(1, ordering: .relaxed)
                } else {
                    next = min(next, limit - (now - since) + 1)
                }
            }
            return next
        }
    }

    /// Sweeps on a thread of its own until ``stop()``: at each connection's deadline while connections are open,
    /// not at all while none is.
    func start() {
        let thread = WatchdogThread(watchdog: self)
        var handle = pthread_t()
        let context = Unmanaged.passRetained(thread).toOpaque()  // released by the thread when it ends
        if pthread_create(&handle, nil, watchdogMain, context) == 0 {
            pthread_detach(handle)
        } else {
            Unmanaged<WatchdogThread>.fromOpaque(context).release()
        }
    }

    /// The thread's loop: a sweep, then a sleep until the next deadline, or until a connection opens.
    fileprivate func run() {
        cmhd_name_current_thread("tabserver-watch")
        while !isStopped {
            threadSweeps.add(1, ordering: .relaxed)
            if let next = sweep(now: clock.nanoseconds, parkingWhenNone: true) {
                // At least 10 ms: a deadline of zero (every connection overdue at once) does not spin the thread.
                let sleep = max(next, 10_000_000)
                _ = opening.wait(timeout: .now() + .nanoseconds(Int(min(sleep, UInt64(Int.max)))))
            } else {
                opening.wait()
            }
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        opening.signal()
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }
}

/// The watchdog thread's context (`pthread_create` takes one pointer).
private final class WatchdogThread: Sendable {
    let watchdog: SlowClientWatchdog
    init(watchdog: SlowClientWatchdog) { self.watchdog = watchdog }
}

private let watchdogMain: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { context in
    guard let context else { return nil }
    // Pairs with the passRetained in `start()`.
    let thread = Unmanaged<WatchdogThread>.fromOpaque(context).takeRetainedValue()
    thread.watchdog.run()
    return nil
}

/// `MHD_NotifyConnectionCallback`: a clock per connection, kept in its socket context.
let connectionNotified: MHD_NotifyConnectionCallback = { cls, connection, socketContext, event in
    guard let cls, let connection, let socketContext else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    if event == MHD_ConnectionNotificationCode.CONNECTION_NOTIFY_STARTED {
        core.connectionsStarted.add(1, ordering: .releasing)
        let clock = ConnectionClock(
            fd: cmhd_connection_fd(connection), tls: core.configuration.tlsCertificate != nil, clock: core.watchdog.clock)
        // Released below when libmicrohttpd reports the connection closed.
        socketContext.pointee = Unmanaged.passRetained(clock).toOpaque()
        core.watchdog.opened(clock)
    } else if let context = socketContext.pointee {
        // Pairs with the passRetained above.
        let clock = Unmanaged<ConnectionClock>.fromOpaque(context).takeRetainedValue()
        core.watchdog.closed(clock)
        socketContext.pointee = nil
    }
}

/// The clock of a connection (nil before libmicrohttpd reported it, which does not happen for a request).
func connectionClock(_ connection: OpaquePointer) -> ConnectionClock? {
    cmhd_socket_context(connection).map { Unmanaged<ConnectionClock>.fromOpaque($0).takeUnretainedValue() }
}
