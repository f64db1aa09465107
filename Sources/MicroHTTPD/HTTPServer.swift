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
    /// The listening socket and its accepting threads when connections begin with a PROXY protocol header
    /// (``HTTPServerConfiguration/proxyProtocol``); nil when libmicrohttpd listens itself.
    private let listener: ProxyProtocolListener?

    /// Starts listening and serving with `handler`.
    /// Behind a PROXY protocol balancer (``HTTPServerConfiguration/proxyProtocol``) the server listens on its own
    /// socket and hands each connection to libmicrohttpd once its header named the client.
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
        // Behind a PROXY protocol balancer the server listens itself and hands connections to the daemon.
        let listener = try configuration.proxyProtocol.map { settings throws(MicroHTTPDError) in
            try ProxyProtocolListener(host: configuration.host, port: configuration.port, settings: settings, clock: configuration.clock)
        }
        let daemon: Daemon
        do {
            daemon = try Daemon.start(core: core, port: configuration.port, tls: tls, listening: listener == nil)
        } catch {
            listener?.stop()
            throw error
        }
        self.core = core
        self.port = listener?.port ?? cmhd_bound_port(daemon.pointer)
        self.daemons = Mutex(DaemonSet(current: daemon, tls: tls != nil))
        self.listener = listener
        if let listener {
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
        }
        core.watchdog.start()
    }

    /// How many more connections the daemon accepting now takes before the connection limit (0 once stopped),
    /// behind a PROXY protocol balancer: the listener hands none off while there is no room, so that further
    /// connections wait in the kernel's backlog. Counted are the daemon's connections and those handed off that its
    /// workers have not yet taken (``ServerCore/connectionsUntaken``).
    private var room: Int {
        daemons.withLock { set in
            guard !set.stopped, let current = set.current else { return 0 }
            let open = Int(cmhd_current_connections(current.pointer)) + core.connectionsUntaken
            return core.configuration.effectiveConnectionLimit - open
        }
    }

    /// Hands a connection whose PROXY header was read to the daemon accepting now (it owns the socket from
    /// here, and closes it if it cannot take it); closes it when the server stopped. The handoff is under the
    /// daemons' lock, so no daemon is stopped while it is being given one.
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
    /// and are not dropped: a second libmicrohttpd daemon binds the same port (`SO_REUSEPORT`, which both
    /// daemons set) and the old one stops accepting and drains; it is stopped once its last connection closed
    /// (checked every second; idle kept-alive connections end at the header deadline, open ones at ``stop()``).
    ///
    /// A connection that reached the old daemon's accept queue in the microseconds between the new daemon's
    /// start and the old listener's close is reset by the kernel unless `net.ipv4.tcp_migrate_req` is 1. Behind the
    /// PROXY protocol (``HTTPServerConfiguration/proxyProtocol``) the server's own socket stays open and hands new
    /// connections to the new daemon, so none is reset.
    /// - Throws: ``MicroHTTPDError/notServingTLS`` for a plain-HTTP or stopped server,
    ///   ``MicroHTTPDError/startFailed(host:port:)`` when GnuTLS refuses the certificate or key (the old
    ///   certificate stays in service).
    public func reloadCertificate(_ certificate: [UInt8], privateKey: [UInt8]) throws(MicroHTTPDError) {
        let material = try TLSMaterial(certificate: certificate, privateKey: privateKey)
        try daemons.withLock { set throws(MicroHTTPDError) in
            guard set.tls, !set.stopped, let old = set.current else { throw .notServingTLS }
            let fresh = try Daemon.start(core: core, port: port, tls: material, listening: listener == nil)
            old.closeListener()
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
        listener?.stop()
        core.refusingConnections.store(true, ordering: .releasing)
        for daemon in all { daemon.closeListener() }
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

/// libmicrohttpd's accept policy: every connection, until the server stops (``ServerCore/refusingConnections``).
private let acceptPolicy: MHD_AcceptPolicyCallback = { cls, _, _ in
    guard let cls else { return MHD_Result.YES }
    let refusing = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().refusingConnections.load(ordering: .acquiring)
    return refusing ? MHD_Result.NO : MHD_Result.YES
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

/// One running libmicrohttpd daemon. Safety (`@unchecked Sendable`): `pointer` is used only through
/// libmicrohttpd's thread-safe entry points, and `closeListener`/`stop` run under ``HTTPServer``'s `daemons`
/// lock or after the daemon left it (once each, guarded by `listenerClosed`/`stopped`).
private final class Daemon: @unchecked Sendable {
    let pointer: OpaquePointer
    private let core: Unmanaged<ServerCore>
    /// The daemon polls with epoll (plain HTTP): see ``closeListener()``.
    private let epoll: Bool
    private var listenerClosed = false
    private var stopped = false

    private init(pointer: OpaquePointer, core: Unmanaged<ServerCore>, epoll: Bool) {
        self.pointer = pointer
        self.core = core
        self.epoll = epoll
    }

    /// Starts a daemon serving `core` on `port` (of the configured host), with TLS when `tls` is given.
    /// With `listening` false the daemon has no listening socket: connections come through `MHD_add_connection`
    /// (``ProxyProtocolListener``), from another thread, which `MHD_USE_ITC` lets wake the daemon's threads.
    /// Its accept policy closes every connection accepted once the server stops.
    static func start(core: ServerCore, port: UInt16, tls: TLSMaterial?, listening: Bool = true) throws(MicroHTTPDError) -> Daemon {
        let configuration = core.configuration
        // Retained for the daemon's callbacks; released in `stop()` after MHD_stop_daemon (or below on failure).
        let coreReference = Unmanaged.passRetained(core)
        let epoll = tls == nil && listening
        let started = try withSocketAddress(configuration.host, port) { address, _, isIPv6 in
            // HTTPS polls with poll(2), not epoll: libmicrohttpd 0.9.75 leaves a connection whose TLS handshake waits
            // for more bytes (gnutls_handshake → GNUTLS_E_AGAIN) marked read-ready in its epoll ready list, so its
            // worker retries it in a loop without waiting: one client that sends part of a ClientHello and stops kept
            // a core at 100% (MHD_run_tls_handshake_ never clears MHD_EPOLL_STATE_READ_READY). With poll(2) each
            // turn asks the kernel again, and a stalled handshake costs nothing until the handshake deadline.
            //
            // Behind a PROXY protocol balancer (no listening socket: connections come through MHD_add_connection) it
            // polls with poll(2) too: with epoll, libmicrohttpd 0.9.75 left connections handed over in a burst (256
            // or 1,024 at once, through HAProxy) registered in a worker's epoll set with their request unread, for good.
            let polling = epoll ? MHD_USE_EPOLL.rawValue : MHD_USE_POLL.rawValue
            var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | polling | MHD_ALLOW_SUSPEND_RESUME.rawValue
            if isIPv6 { flags |= MHD_USE_IPv6.rawValue }
            if tls != nil { flags |= MHD_USE_TLS.rawValue }
            if !listening { flags |= MHD_USE_NO_LISTEN_SOCKET.rawValue | MHD_USE_ITC.rawValue }
            var options: [MHD_OptionItem] = [
                MHD_OptionItem(
                    option: MHD_OPTION.CONNECTION_LIMIT,
                    value: listening ? configuration.effectiveConnectionLimit : configuration.daemonConnectionLimit, ptr_value: nil),
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
            if listening {
                options += [
                    MHD_OptionItem(option: MHD_OPTION.LISTEN_BACKLOG_SIZE, value: 1024, ptr_value: nil),
                    MHD_OptionItem(option: MHD_OPTION.SOCK_ADDR, value: 0, ptr_value: UnsafeMutableRawPointer(address)),
                ]
            }
            if configuration.perIPConnectionLimit > 0 {
                options.append(
                    MHD_OptionItem(
                        option: MHD_OPTION.PER_IP_CONNECTION_LIMIT, value: configuration.perIPConnectionLimit, ptr_value: nil))
            }
            return withTLSOptions(tls, options) { items in
                cmhd_start_daemon(
                    flags, listening ? port : 0, acceptPolicy, coreReference.toOpaque(), accessHandler, coreReference.toOpaque(),
                    items.baseAddress)
            }
        }
        guard let started else {
            coreReference.release()  // pairs with passRetained above: the daemon never started
            throw .startFailed(host: configuration.host, port: port)
        }
        return Daemon(pointer: started, core: coreReference, epoll: epoll)
    }

    /// Stops accepting: new connections go to another daemon on the port, or are refused. An epoll daemon is not
    /// quiesced: libmicrohttpd 0.9.75's `MHD_quiesce_daemon` deletes the listening socket from each worker's epoll set
    /// while the worker may be deleting it too, and aborts the process when the worker was first (seen under load at
    /// a stop). Its listening socket stays open until `MHD_stop_daemon`, and the accept policy closes every
    /// connection it accepts meanwhile (the server set ``ServerCore/refusingConnections`` before), unanswered.
    func closeListener() {
        guard !listenerClosed else { return }
        listenerClosed = true
        guard !epoll else { return }
        let listener = MHD_quiesce_daemon(pointer)
        if listener >= 0 { close(listener) }
    }

    /// Closes every connection and ends the daemon's threads; its suspended connections must have been resumed.
    func stop() {
        guard !stopped else { return }
        stopped = true
        closeListener()
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
                        // SO_REUSEPORT: a reload's new daemon binds the same port while this one drains.
                        MHD_OptionItem(option: MHD_OPTION.LISTENING_ADDRESS_REUSE, value: 1, ptr_value: nil),
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
