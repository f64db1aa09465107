internal import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: an internal thread pool with epoll, keep-alive, connection,
/// timeout and size limits, strict RFC 9112 parsing, admission before any body byte is read, a memory budget for
/// bodies, suspend/resume for deferred replies, optional HTTPS, and a stop that finishes within a bound.
public final class HTTPServer: Sendable {
    /// The port the server listens on (the one the kernel picked when configured with 0).
    public let port: UInt16
    private let core: ServerCore
    private let daemons: Mutex<DaemonSet>
    /// The listening socket and its accepting threads (``ConnectionListener``): the daemons have none of their own.
    private let listener: ConnectionListener

    /// Starts listening and serving with `handler`.
    /// The server listens on its own socket and hands each connection to libmicrohttpd (behind a PROXY protocol
    /// balancer, ``HTTPServerConfiguration/proxyProtocol``, once its header named the client).
    /// - Throws: ``MicroHTTPDError/invalidHost(_:)``, ``MicroHTTPDError/startFailed(host:port:)``, or for HTTPS
    ///   ``MicroHTTPDError/tlsUnsupported`` and ``MicroHTTPDError/tlsIncomplete``.
    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) throws(MicroHTTPDError) {
        let tls: TLSMaterial?
        switch (configuration.tlsCertificate, configuration.tlsPrivateKey) {
        case (nil, nil): tls = nil
        case (let certificate?, let key?): tls = try TLSMaterial(certificate: certificate, privateKey: key)
        default: throw .tlsIncomplete
        }
        let core = ServerCore(handler: handler, configuration: configuration)
        let listener = try ConnectionListener(
            host: configuration.host, port: configuration.port, proxy: configuration.proxyProtocol, clock: configuration.clock)
        let daemon: Daemon
        do {
            daemon = try Daemon.start(core: core, tls: tls)
        } catch {
            listener.stop()
            throw error
        }
        self.core = core
        self.port = listener.port
        self.daemons = Mutex(DaemonSet(current: daemon, tls: tls != nil))
        self.listener = listener
        let accepting = listener.start(
            admits: { [weak self] in (self?.room ?? 0) > 0 },
            handoff: { [weak self] socket, address in
                guard let self else {
                    close(socket)
                    return
                }
                self.addConnection(socket, from: address)
            })
        guard accepting else {
            stop()
            throw .startFailed(host: configuration.host, port: port)
        }
        core.watchdog.start()
    }

    /// How many more connections the daemon accepting now takes before the connection limit (0 once stopped): the
    /// listener hands none off while there is no room, so that further connections wait in the kernel's backlog.
    /// Counted are the daemon's connections and those handed off that its workers have not yet taken
    /// (``ServerCore/connectionsUntaken``).
    private var room: Int {
        daemons.withLock { set in
            guard !set.stopped, let current = set.current else { return 0 }
            let open = Int(cmhd_current_connections(current.pointer)) + core.connectionsUntaken
            return core.configuration.effectiveConnectionLimit - open
        }
    }

    /// Hands an accepted connection (behind a balancer, one whose PROXY header was read) to the daemon accepting
    /// now (it owns the socket from here, and closes it if it cannot take it); closes it when the server stopped.
    /// The handoff is under the daemons' lock, so no daemon is stopped while it is being given one.
    private func addConnection(_ socket: Int32, from address: ClientSocketAddress) {
        // nil: the server stopped (the socket is still the listener's); false: libmicrohttpd refused and closed it.
        let added: Bool? = daemons.withLock { set in
            guard !set.stopped, let current = set.current else { return nil }
            // Counted before the worker can take it (and count it started).
            core.handingOff()
            let added = address.withSocketAddress { MHD_add_connection(current.pointer, socket, $0, $1) } == MHD_Result.YES
            if !added { core.handOffFailed() }
            return added
        }
        if added == nil { close(socket) }
    }

    /// Requests begun and not yet completed.
    public var requestsInFlight: Int { core.inFlight.load(ordering: .relaxed) }

    /// Bytes of request bodies reserved in the budget right now (see ``HTTPServerConfiguration/bodyBudgetBytes``).
    public var bodyBytesReserved: Int { core.bodyBytesReserved.load(ordering: .relaxed) }

    /// Deferred replies whose connection is suspended right now.
    public var suspendedConnections: Int { core.suspensions.count }

    /// Deferred replies answered with a paced answer whose connection waits for its turn to be resumed.
    public var pacedResumesQueued: Int { core.suspensions.queued }

    /// What the paced resumer did so far (slices, items, the most resumed and not picked up at once).
    public var pacedResumes: PacedResumer.Counters { core.resumer.counted }

    /// Connections open right now, over every daemon (a certificate reload leaves the old one draining).
    public var openConnections: Int {
        daemons.withLock { set in set.all.reduce(0) { $0 + Int(cmhd_current_connections($1.pointer)) } }
    }

    /// Serves new connections with a new certificate and key (PEM) while connections already open keep theirs
    /// and are not dropped: the server's listening socket stays open and hands new connections to a second
    /// libmicrohttpd daemon, and the old one drains; it is stopped once its last connection closed (checked every
    /// second; idle kept-alive connections end at the header deadline, open ones at ``stop()``). No connection is
    /// reset by the reload.
    /// - Throws: ``MicroHTTPDError/notServingTLS`` for a plain-HTTP or stopped server,
    ///   ``MicroHTTPDError/startFailed(host:port:)`` when GnuTLS refuses the certificate or key (the old
    ///   certificate stays in service).
    public func reloadCertificate(_ certificate: [UInt8], privateKey: [UInt8]) throws(MicroHTTPDError) {
        let material = try TLSMaterial(certificate: certificate, privateKey: privateKey)
        try daemons.withLock { set throws(MicroHTTPDError) in
            guard set.tls, !set.stopped, let old = set.current else { throw .notServingTLS }
            let fresh = try Daemon.start(core: core, tls: material)
            set.current = fresh
            set.draining.append(old)
        }
        Task.detached { [weak self] in
            while let server = self, server.reapDrainedDaemons() > 0 {
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Stops the draining daemons that have no connection left; returns how many still drain.
    @discardableResult
    func reapDrainedDaemons() -> Int {
        daemons.withLock { set in
            set.draining.removeAll { daemon in
                guard cmhd_current_connections(daemon.pointer) == 0 else { return false }
                daemon.stop()
                return true
            }
            return set.draining.count
        }
    }

    /// Daemons left draining by certificate reloads.
    var drainingDaemons: Int { daemons.withLock { $0.draining.count } }

    /// Stops within a bound: stops accepting, calls ``HTTPHandler/serverWillStop()`` (answer held requests
    /// now), waits up to ``HTTPServerConfiguration/stopGraceSeconds`` for requests in flight and deferred replies,
    /// then answers every deferred reply still running with ``HTTPHandler/refuse(_:)`` for
    /// ``RequestRefusal/serverStopping`` (503), waits at most 0.25 s for those answers to go out, and closes every
    /// connection (a client still sending a body is cut off). Returns within the grace plus about 0.3 s.
    /// Safe to call more than once.
    public func stop() {
        let all: [Daemon]? = daemons.withLock { set in
            guard !set.stopped else { return nil }
            set.stopped = true
            defer {
                set.current = nil
                set.draining = []
            }
            return set.all
        }
        guard let all else { return }
        listener.stop()
        core.handler.serverWillStop()
        let deadline = core.configuration.clock.seconds + core.configuration.stopGraceSeconds
        while core.inFlight.load(ordering: .acquiring) > 0 || core.deferred.load(ordering: .acquiring) > 0,
            core.configuration.clock.seconds < deadline
        {
            usleep(2_000)
        }
        // Every suspended connection must be resumed before MHD_stop_daemon (libmicrohttpd 0.9.75 panics on a
        // suspended one), and none may be resumed after it (the connection is freed then).
        let left = core.resumeAllSuspended(answer: core.handler.refuse(.serverStopping))
        if left > 0 {
            let answered = core.configuration.clock.seconds + 0.25
            while core.inFlight.load(ordering: .acquiring) > 0, core.configuration.clock.seconds < answered { usleep(2_000) }
        }
        core.watchdog.stop()
        for daemon in all { daemon.stop() }
    }

    deinit { stop() }
}

/// The daemons of one server: the one accepting, and those draining after a certificate reload.
private struct DaemonSet {
    var current: Daemon?
    var draining: [Daemon] = []
    let tls: Bool
    var stopped = false

    init(current: Daemon, tls: Bool) {
        self.current = current
        self.tls = tls
    }

    var all: [Daemon] { (current.map { [$0] } ?? []) + draining }
}

/// A certificate and key as NUL-terminated C strings, as `MHD_OPTION_HTTPS_MEM_CERT`/`_KEY` take them.
private struct TLSMaterial {
    let certificate: [CChar]
    let privateKey: [CChar]

    init(certificate: [UInt8], privateKey: [UInt8]) throws(MicroHTTPDError) {
        guard cmhd_tls_supported() != 0 else { throw .tlsUnsupported }
        self.certificate = certificate.map { CChar(bitPattern: $0) } + [0]
        self.privateKey = privateKey.map { CChar(bitPattern: $0) } + [0]
    }
}

/// One running libmicrohttpd daemon, without a listening socket: connections come through `MHD_add_connection`
/// (``ConnectionListener``). Safety (`@unchecked Sendable`): `pointer` is used only through libmicrohttpd's
/// thread-safe entry points, and `stop` runs under ``HTTPServer``'s `daemons` lock or after the daemon left it
/// (once, guarded by `stopped`).
private final class Daemon: @unchecked Sendable {
    let pointer: OpaquePointer
    private let core: Unmanaged<ServerCore>
    private var stopped = false

    private init(pointer: OpaquePointer, core: Unmanaged<ServerCore>) {
        self.pointer = pointer
        self.core = core
    }

    /// Starts a daemon serving `core`, with TLS when `tls` is given. It has no listening socket: connections come
    /// through `MHD_add_connection` from the listener's thread, which `MHD_USE_ITC` lets wake the daemon's threads.
    static func start(core: ServerCore, tls: TLSMaterial?) throws(MicroHTTPDError) -> Daemon {
        let configuration = core.configuration
        // Retained for the daemon's callbacks; released in `stop()` after MHD_stop_daemon (or below on failure).
        let coreReference = Unmanaged.passRetained(core)
        let started: OpaquePointer? = {
            // HTTPS polls with poll(2), not epoll: libmicrohttpd 0.9.75 leaves a connection whose TLS handshake waits
            // for more bytes (gnutls_handshake → GNUTLS_E_AGAIN) marked read-ready in its epoll ready list, so its
            // worker retries it in a loop without waiting: one client that sends part of a ClientHello and stops kept
            // a core at 100% (MHD_run_tls_handshake_ never clears MHD_EPOLL_STATE_READ_READY). With poll(2) each
            // turn asks the kernel again, and a stalled handshake costs nothing until the handshake deadline.
            let polling = tls == nil ? MHD_USE_EPOLL.rawValue : MHD_USE_POLL.rawValue
            var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | polling | MHD_ALLOW_SUSPEND_RESUME.rawValue
            flags |= MHD_USE_NO_LISTEN_SOCKET.rawValue | MHD_USE_ITC.rawValue
            if tls != nil { flags |= MHD_USE_TLS.rawValue }
            var options: [MHD_OptionItem] = [
                MHD_OptionItem(option: MHD_OPTION.CONNECTION_LIMIT, value: configuration.daemonConnectionLimit, ptr_value: nil),
                MHD_OptionItem(
                    option: MHD_OPTION.CONNECTION_TIMEOUT, value: configuration.connectionTimeoutSeconds, ptr_value: nil),
                // libmicrohttpd 0.9.75 zeroes the whole pool after every request: sized to the header limit plus
                // room for the response's headers, not more (64 KiB cost a 64 KiB memset per request, ~10% of CPU).
                MHD_OptionItem(
                    option: MHD_OPTION.CONNECTION_MEMORY_LIMIT, value: configuration.connectionPoolBytes, ptr_value: nil),
                cmhd_option_notify_completed(requestCompleted, coreReference.toOpaque()),
                cmhd_option_notify_connection(connectionNotified, coreReference.toOpaque()),
                cmhd_option_uri_log(targetReceived, coreReference.toOpaque()),
                // A pool of `workerThreads`; one is libmicrohttpd's single internal polling thread.
                MHD_OptionItem(option: MHD_OPTION.THREAD_POOL_SIZE, value: configuration.workerThreads, ptr_value: nil),
            ]
            if configuration.perIPConnectionLimit > 0 {
                options.append(
                    MHD_OptionItem(
                        option: MHD_OPTION.PER_IP_CONNECTION_LIMIT, value: configuration.perIPConnectionLimit, ptr_value: nil))
            }
            return withTLSOptions(tls, options) { items in
                cmhd_start_daemon(flags, 0, accessHandler, coreReference.toOpaque(), items.baseAddress)
            }
        }()
        guard let started else {
            coreReference.release()  // pairs with passRetained above: the daemon never started
            throw .startFailed(host: configuration.host, port: configuration.port)
        }
        return Daemon(pointer: started, core: coreReference)
    }

    /// Closes every connection and ends the daemon's threads; its suspended connections must have been resumed.
    func stop() {
        guard !stopped else { return }
        stopped = true
        MHD_stop_daemon(pointer)
        // Pairs with Unmanaged.passRetained in `start`: no callback can run after MHD_stop_daemon.
        core.release()
    }
}

/// Appends the HTTPS options (when `tls` is given) and `MHD_OPTION_END`, and calls `body` with the items.
/// libmicrohttpd reads the certificate and key during `MHD_start_daemon` only (into GnuTLS credentials).
private func withTLSOptions<R>(
    _ tls: TLSMaterial?, _ options: [MHD_OptionItem], _ body: (UnsafeBufferPointer<MHD_OptionItem>) -> R
) -> R {
    guard let tls else {
        return (options + [MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil)]).withUnsafeBufferPointer(body)
    }
    return tls.certificate.withUnsafeBufferPointer { certificate in
        tls.privateKey.withUnsafeBufferPointer { key in
            tlsPriorities.withUnsafeBufferPointer { priorities in
                let items =
                    options + [
                        MHD_OptionItem(
                            option: MHD_OPTION.HTTPS_MEM_CERT, value: 0,
                            ptr_value: UnsafeMutableRawPointer(mutating: certificate.baseAddress)),
                        MHD_OptionItem(
                            option: MHD_OPTION.HTTPS_MEM_KEY, value: 0, ptr_value: UnsafeMutableRawPointer(mutating: key.baseAddress)),
                        MHD_OptionItem(
                            option: MHD_OPTION.HTTPS_PRIORITIES, value: 0,
                            ptr_value: UnsafeMutableRawPointer(mutating: priorities.baseAddress)),
                        MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil),
                    ]
                return items.withUnsafeBufferPointer(body)
            }
        }
    }
}

/// GnuTLS priorities: its defaults, TLS 1.3 and 1.2 only.
private let tlsPriorities: [CChar] = Array("NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2".utf8).map { CChar(bitPattern: $0) } + [0]

/// Calls `body` with a `sockaddr` for `host:port`, its length, and whether it is IPv6.
func withSocketAddress<R>(
    _ host: String, _ port: UInt16, _ body: (UnsafeMutablePointer<sockaddr>, socklen_t, Bool) -> R
) throws(MicroHTTPDError) -> R {
    var bytes = [UInt8](repeating: 0, count: 16)
    let isIPv6: Bool
    if inet_pton(AF_INET, host, &bytes) == 1 {
        isIPv6 = false
    } else if inet_pton(AF_INET6, host, &bytes) == 1 {
        isIPv6 = true
    } else {
        throw .invalidHost(host)
    }
    var address = ClientSocketAddress(isIPv6: isIPv6, address: bytes, port: port)
    let length = address.length
    return withUnsafeMutablePointer(to: &address.storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length, isIPv6) }
    }
}
