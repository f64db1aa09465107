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

    /// Starts listening and serving with `handler`.
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
        let daemon = try Daemon.start(core: core, port: configuration.port, tls: tls)
        self.core = core
        self.port = cmhd_bound_port(daemon.pointer)
        self.daemons = Mutex(DaemonSet(current: daemon, tls: tls != nil))
        core.watchdog.start()
    }

    /// Requests begun and not yet completed.
    public var requestsInFlight: Int { core.inFlight.load(ordering: .relaxed) }

    /// Bytes of request bodies reserved in the budget right now (see ``HTTPServerConfiguration/bodyBudgetBytes``).
    public var bodyBytesReserved: Int { core.bodyBytesReserved.load(ordering: .relaxed) }

    /// Deferred replies whose connection is suspended right now.
    public var suspendedConnections: Int { core.suspensions.withLock { $0.entries.count } }

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
    /// start and the old listener's close is reset by the kernel unless `net.ipv4.tcp_migrate_req` is 1.
    /// - Throws: ``MicroHTTPDError/notServingTLS`` for a plain-HTTP or stopped server,
    ///   ``MicroHTTPDError/startFailed(host:port:)`` when GnuTLS refuses the certificate or key (the old
    ///   certificate stays in service).
    public func reloadCertificate(_ certificate: [UInt8], privateKey: [UInt8]) throws(MicroHTTPDError) {
        let material = try TLSMaterial(certificate: certificate, privateKey: privateKey)
        try daemons.withLock { set throws(MicroHTTPDError) in
            guard set.tls, !set.stopped, let old = set.current else { throw .notServingTLS }
            let fresh = try Daemon.start(core: core, port: port, tls: material)
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
        for daemon in all { daemon.closeListener() }
        core.handler.serverWillStop()
        let deadline = monotonicSeconds() + core.configuration.stopGraceSeconds
        while core.inFlight.load(ordering: .acquiring) > 0 || core.deferred.load(ordering: .acquiring) > 0,
            monotonicSeconds() < deadline
        {
            usleep(2_000)
        }
        // Every suspended connection must be resumed before MHD_stop_daemon (libmicrohttpd 0.9.75 panics on a
        // suspended one), and none may be resumed after it (the connection is freed then).
        let left = core.resumeAllSuspended(answer: core.handler.refuse(.serverStopping))
        if left > 0 {
            let answered = monotonicSeconds() + 0.25
            while core.inFlight.load(ordering: .acquiring) > 0, monotonicSeconds() < answered { usleep(2_000) }
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

/// One running libmicrohttpd daemon. Safety (`@unchecked Sendable`): `pointer` is used only through
/// libmicrohttpd's thread-safe entry points, and `closeListener`/`stop` run under ``HTTPServer``'s `daemons`
/// lock or after the daemon left it (once each, guarded by `listenerClosed`/`stopped`).
private final class Daemon: @unchecked Sendable {
    let pointer: OpaquePointer
    private let core: Unmanaged<ServerCore>
    private var listenerClosed = false
    private var stopped = false

    private init(pointer: OpaquePointer, core: Unmanaged<ServerCore>) {
        self.pointer = pointer
        self.core = core
    }

    /// Starts a daemon serving `core` on `port` (of the configured host), with TLS when `tls` is given.
    static func start(core: ServerCore, port: UInt16, tls: TLSMaterial?) throws(MicroHTTPDError) -> Daemon {
        let configuration = core.configuration
        // Retained for the daemon's callbacks; released in `stop()` after MHD_stop_daemon (or below on failure).
        let coreReference = Unmanaged.passRetained(core)
        let started = try withSocketAddress(configuration.host, port) { address, isIPv6 in
            // HTTPS polls with poll(2), not epoll: libmicrohttpd 0.9.75 leaves a connection whose TLS handshake waits
            // for more bytes (gnutls_handshake → GNUTLS_E_AGAIN) marked read-ready in its epoll ready list, so its
            // worker retries it in a loop without waiting: one client that sends part of a ClientHello and stops kept
            // a core at 100% (MHD_run_tls_handshake_ never clears MHD_EPOLL_STATE_READ_READY). With poll(2) each
            // turn asks the kernel again, and a stalled handshake costs nothing until the handshake deadline.
            let polling = tls == nil ? MHD_USE_EPOLL.rawValue : MHD_USE_POLL.rawValue
            var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | polling | MHD_ALLOW_SUSPEND_RESUME.rawValue
            if isIPv6 { flags |= MHD_USE_IPv6.rawValue }
            if tls != nil { flags |= MHD_USE_TLS.rawValue }
            var options: [MHD_OptionItem] = [
                MHD_OptionItem(option: MHD_OPTION.CONNECTION_LIMIT, value: configuration.effectiveConnectionLimit, ptr_value: nil),
                MHD_OptionItem(
                    option: MHD_OPTION.CONNECTION_TIMEOUT, value: configuration.connectionTimeoutSeconds, ptr_value: nil),
                // libmicrohttpd 0.9.75 zeroes the whole pool after every request: sized to the header limit plus
                // room for the response's headers, not more (64 KiB cost a 64 KiB memset per request, ~10% of CPU).
                MHD_OptionItem(
                    option: MHD_OPTION.CONNECTION_MEMORY_LIMIT, value: configuration.maxHeaderBytes + 4096, ptr_value: nil),
                MHD_OptionItem(option: MHD_OPTION.LISTEN_BACKLOG_SIZE, value: 1024, ptr_value: nil),
                MHD_OptionItem(option: MHD_OPTION.SOCK_ADDR, value: 0, ptr_value: address),
                cmhd_option_notify_completed(requestCompleted, coreReference.toOpaque()),
                cmhd_option_notify_connection(connectionNotified, coreReference.toOpaque()),
                cmhd_option_uri_log(targetReceived, coreReference.toOpaque()),
                // Always a pool, of at least two workers: libmicrohttpd 0.9.75's single polling thread (epoll or
                // poll) was measured here to stop reading ready connections above ~120 concurrent clients.
                MHD_OptionItem(option: MHD_OPTION.THREAD_POOL_SIZE, value: configuration.workerThreads, ptr_value: nil),
            ]
            if configuration.perIPConnectionLimit > 0 {
                options.append(
                    MHD_OptionItem(
                        option: MHD_OPTION.PER_IP_CONNECTION_LIMIT, value: configuration.perIPConnectionLimit, ptr_value: nil))
            }
            return withTLSOptions(tls, options) { items in
                cmhd_start_daemon(flags, port, accessHandler, coreReference.toOpaque(), items.baseAddress)
            }
        }
        guard let started else {
            coreReference.release()  // pairs with passRetained above: the daemon never started
            throw .startFailed(host: configuration.host, port: port)
        }
        return Daemon(pointer: started, core: coreReference)
    }

    /// Stops accepting: new connections go to another daemon on the port, or are refused.
    func closeListener() {
        guard !listenerClosed else { return }
        listenerClosed = true
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

/// What the C callbacks reach through their `cls` pointer.
final class ServerCore: Sendable {
    let handler: any HTTPHandler
    let configuration: HTTPServerConfiguration
    /// Requests whose access handler was called and whose completion libmicrohttpd has not yet reported.
    let inFlight = Atomic<Int>(0)
    /// Deferred replies still running (their connections are suspended).
    let deferred = Atomic<Int>(0)
    /// Bytes of request bodies reserved (see ``HTTPServerConfiguration/bodyBudgetBytes``).
    let bodyBytesReserved = Atomic<Int>(0)
    let watchdog: SlowClientWatchdog
    let suspensions = Mutex(SuspensionTable())

    init(handler: any HTTPHandler, configuration: HTTPServerConfiguration) {
        self.handler = handler
        self.configuration = configuration
        self.watchdog = SlowClientWatchdog(
            headerDeadlineSeconds: configuration.headerDeadlineSeconds, bodyDeadlineSeconds: configuration.bodyDeadlineSeconds,
            handshakeDeadlineSeconds: configuration.tlsHandshakeDeadlineSeconds)
    }

    /// Takes `bytes` from the body budget; false (nothing taken) when it would go over.
    func reserveBody(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        var current = bodyBytesReserved.load(ordering: .relaxed)
        while true {
            guard current <= configuration.bodyBudgetBytes - bytes else { return false }
            let (exchanged, original) = bodyBytesReserved.compareExchange(
                expected: current, desired: current + bytes, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
    }

    func releaseBody(_ bytes: Int) {
        if bytes > 0 { bodyBytesReserved.subtract(bytes, ordering: .releasing) }
    }

    /// Suspends `connection` for deferred work on `state`; false when the server is past its stop grace
    /// (the caller answers at once then). Under the table's lock, so `resumeAllSuspended` sees it suspended.
    func suspend(_ connection: OpaquePointer, _ state: PendingRequest) -> Bool {
        suspensions.withLock { table in
            guard !table.closed else { return false }
            table.entries[ObjectIdentifier(state)] = SuspendedConnection(pointer: connection, state: state)
            MHD_suspend_connection(connection)
            return true
        }
    }

    /// Queues `response` for a deferred reply and resumes its connection, unless a stop already did.
    func finishDeferred(_ state: PendingRequest, _ response: HTTPResponse) {
        suspensions.withLock { table in
            guard let entry = table.entries.removeValue(forKey: ObjectIdentifier(state)) else { return }
            state.setPending(response)
            // The next access-handler call (after the resume) queues `pending`.
            MHD_resume_connection(entry.pointer)
        }
    }

    /// Answers every suspended connection with `answer`, resumes it, and refuses further suspensions.
    /// Returns how many were resumed.
    func resumeAllSuspended(answer: HTTPResponse) -> Int {
        suspensions.withLock { table in
            table.closed = true
            defer { table.entries = [:] }
            for entry in table.entries.values {
                entry.state.setPending(answer)
                MHD_resume_connection(entry.pointer)
            }
            return table.entries.count
        }
    }
}

/// Connections suspended for deferred replies, by their request's ``PendingRequest``.
struct SuspensionTable {
    var entries: [ObjectIdentifier: SuspendedConnection] = [:]
    /// Set when a stop resumed everything: no suspension after that.
    var closed = false
}

/// A suspended connection handed to deferred work. Safety (`@unchecked Sendable`): the only call made with it
/// off libmicrohttpd's threads is `MHD_resume_connection`, which libmicrohttpd allows from any thread, made
/// under ``ServerCore/suspensions`` once (whoever removes the entry), always before `MHD_stop_daemon`.
struct SuspendedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
    let state: PendingRequest
}

/// Per-request state of a request that carries a body or waits for deferred work. Created on the
/// access handler's first call (`Unmanaged.passRetained`), released in `requestCompleted`.
final class PendingRequest: Sendable {
    let method: HTTPMethod
    /// Where the raw query starts in the target (see ``RequestMarker/queryOffset``).
    let queryOffset: Int
    /// What the handler's admission noted, handed to its `handle` call.
    let admission: (any Sendable)?
    private let state: Mutex<State>

    struct State {
        var body: [UInt8] = []
        var overflow: Overflow?
        /// Body bytes read and dropped after an overflow.
        var discarded = 0
        /// Bytes held in the server's body budget for this request.
        var reserved = 0
        var pending: HTTPResponse?
    }

    /// Why a body stopped being kept.
    enum Overflow {
        case tooLarge
        case overBudget
    }

    /// - Parameters:
    ///   - reserved: budget bytes already taken for this request (its declared Content-Length).
    ///   - queryOffset: where the raw query starts in the target, 0 for none.
    init(method: HTTPMethod, reserved: Int = 0, queryOffset: Int = 0, admission: (any Sendable)? = nil) {
        self.method = method
        self.queryOffset = queryOffset
        self.admission = admission
        var initial = State()
        initial.reserved = reserved
        initial.body.reserveCapacity(reserved)
        self.state = Mutex(initial)
    }

    /// Appends an upload chunk, within `limit` and (beyond what is reserved) the server's budget. After an
    /// overflow the body is dropped and chunks are counted only; false once more than `drainLimit` bytes were
    /// dropped (the connection is closed then).
    func append(_ chunk: UnsafeRawBufferPointer, limit: Int, drainLimit: Int, core: ServerCore) -> Bool {
        var released = 0
        defer { core.releaseBody(released) }
        return state.withLock { state in
            if state.overflow != nil {
                state.discarded += chunk.count
                return state.discarded <= drainLimit
            }
            let needed = state.body.count + chunk.count
            if needed > limit || (needed > state.reserved && !core.reserveBody(needed - state.reserved)) {
                state.overflow = needed > limit ? .tooLarge : .overBudget
                state.discarded = needed
                state.body = []
                released = state.reserved
                state.reserved = 0
                return true
            }
            state.reserved = max(state.reserved, needed)
            state.body.append(contentsOf: chunk)
            return true
        }
    }

    var overflow: Overflow? { state.withLock { $0.overflow } }
    var body: [UInt8] { state.withLock { $0.body } }

    /// Gives back the budget bytes held and the body (the request is over).
    func release(core: ServerCore) {
        let reserved = state.withLock { state in
            defer {
                state.reserved = 0
                state.body = []
            }
            return state.reserved
        }
        core.releaseBody(reserved)
    }

    func setPending(_ response: HTTPResponse) { state.withLock { $0.pending = response } }
    func takePending() -> HTTPResponse? {
        state.withLock { state in
            defer { state.pending = nil }
            return state.pending
        }
    }
}

private func parseMethod(_ method: UnsafePointer<CChar>) -> HTTPMethod {
    switch (method[0], method[1], method[2], method[3]) {
    case (0x47, 0x45, 0x54, 0): .get
    case (0x48, 0x45, 0x41, 0x44) where method[4] == 0: .head
    case (0x50, 0x55, 0x54, 0): .put
    case (0x50, 0x4F, 0x53, 0x54) where method[4] == 0: .post
    default:
        switch String(cString: method) {
        case "PATCH": .patch
        case "DELETE": .delete
        case "OPTIONS": .options
        case let other: .other(other)
        }
    }
}

/// The access handler (`MHD_AccessHandlerCallback`). Total: every path returns a queued answer or MHD_Result.YES.
/// First call: headers are in; check syntax and limits, admit, and set `*req_cls`. Later calls: body chunks, then
/// the reply (answering on the first call would make libmicrohttpd drop keep-alive).
private let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, requestContext in
    guard let cls, let connection, let url, let method, let uploadDataSize, let requestContext else {
        return MHD_Result.NO
    }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let marker = RequestMarker(requestContext.pointee)
    guard let context = requestContext.pointee, marker?.kind != .target else {
        core.inFlight.add(1, ordering: .relaxed)
        return headersReceived(core, connection, url, method, marker ?? RequestMarker(.target), requestContext)
    }
    if let marker, marker.kind == .headersSeen {
        if uploadDataSize.pointee > 0 {
            uploadDataSize.pointee = 0  // a body on GET or HEAD has no meaning here: read and drop it
            return MHD_Result.YES
        }
        let request = HTTPRequest(
            method: parseMethod(method), body: [], connection: connection, url: url, queryOffset: marker.queryOffset)
        return reply(
            core.handler.handle(request), core: core, connection: connection, method: request.method, requestContext: requestContext)
    }
    if marker?.kind == .answered {
        uploadDataSize.pointee = 0
        return MHD_Result.YES
    }
    let state = Unmanaged<PendingRequest>.fromOpaque(context).takeUnretainedValue()
    if let pending = state.takePending() {
        return queue(pending, connection)
    }
    let configuration = core.configuration
    if uploadDataSize.pointee > 0 {
        var keepReading = true
        if let uploadData {
            keepReading = state.append(
                UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee), limit: configuration.maxBodyBytes,
                drainLimit: 4 * configuration.maxBodyBytes, core: core)
        }
        uploadDataSize.pointee = 0
        // libmicrohttpd 0.9.75 cannot queue an answer while a body is still arriving: an overflowing chunked body
        // is read and dropped up to the drain limit and answered at its end; beyond the limit the connection closes.
        return keepReading ? MHD_Result.YES : MHD_Result.NO
    }
    connectionClock(connection)?.enter(.answering)
    switch state.overflow {
    case .tooLarge: return queue(core.handler.reject(.bodyTooLarge(limit: configuration.maxBodyBytes)), connection)
    case .overBudget:
        return queue(core.handler.refuse(.bodyBudgetExhausted(retryAfterSeconds: configuration.bodyBudgetRetryAfterSeconds)), connection)
    case nil: break
    }
    let request = HTTPRequest(
        method: state.method, body: state.body, connection: connection, url: url, queryOffset: state.queryOffset,
        admission: state.admission)
    return reply(core.handler.handle(request), core: core, connection: connection, method: state.method, requestContext: requestContext)
}

/// The access handler's first call: the request line and header block are complete, no body byte was read.
/// Refusals are queued now (libmicrohttpd then sends no `100 Continue`, never reads the body, and closes).
private func headersReceived(
    _ core: ServerCore, _ connection: OpaquePointer, _ url: UnsafePointer<CChar>, _ method: UnsafePointer<CChar>,
    _ marker: RequestMarker, _ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    let configuration = core.configuration
    let target = marker.flags
    let queryOffset = restoreQuery(url, marker)
    func refuse(_ response: HTTPResponse) -> MHD_Result {
        requestContext.pointee = RequestMarker.answered
        return queue(response, connection)
    }
    if target.contains(.malformed) {
        return refuse(
            core.handler.refuse(.malformed("the request target contains a space, a control character or an escaped control character")))
    }
    if target.contains(.tooLong) { return refuse(core.handler.refuse(.targetTooLong(limit: configuration.maxTargetBytes))) }
    if target.contains(.tooManyParameters) {
        return refuse(core.handler.refuse(.tooManyQueryParameters(limit: configuration.maxQueryParameters)))
    }
    let facts = HeaderBlockFacts.scan(connection, requestLine: UnsafeRawPointer(method).assumingMemoryBound(to: UInt8.self))
    if let violation = facts.framingViolation(http11: target.contains(.http11)) { return refuse(core.handler.refuse(violation)) }
    // The request line (target and query included) and every field line.
    if facts.size > configuration.maxHeaderBytes {
        return refuse(core.handler.reject(.headerBlockTooLarge(limit: configuration.maxHeaderBytes)))
    }
    let parsed = parseMethod(method)
    let clock = connectionClock(connection)
    let bodiless = parsed == .get || parsed == .head
    if bodiless && !facts.announcesBody {
        clock?.enter(.answering)
        requestContext.pointee = RequestMarker(.headersSeen, queryOffset: queryOffset).pointer
        return MHD_Result.YES
    }
    if let declared = facts.contentLength, declared > configuration.maxBodyBytes {
        return refuse(core.handler.reject(.bodyTooLarge(limit: configuration.maxBodyBytes)))
    }
    var admission: (any Sendable)?
    switch core.handler.admit(HTTPRequest(method: parsed, body: [], connection: connection, url: url, queryOffset: queryOffset)) {
    case .refuse(let response): return refuse(response)
    case .proceedNoting(let note): admission = note
    case .proceed: break
    }
    clock?.enter(.receivingBody)
    if bodiless {
        // A GET or HEAD body has no meaning here: read and dropped without buffering.
        requestContext.pointee = RequestMarker(.headersSeen, queryOffset: queryOffset).pointer
        return MHD_Result.YES
    }
    let declared = facts.contentLength ?? 0
    guard core.reserveBody(declared) else {
        return refuse(core.handler.refuse(.bodyBudgetExhausted(retryAfterSeconds: configuration.bodyBudgetRetryAfterSeconds)))
    }
    // Released in `requestCompleted`, which also gives back the reservation.
    requestContext.pointee = Unmanaged.passRetained(
        PendingRequest(method: parsed, reserved: declared, queryOffset: queryOffset, admission: admission)
    ).toOpaque()
    return MHD_Result.YES
}

private func reply(
    _ reply: HTTPReply, core: ServerCore, connection: OpaquePointer, method: HTTPMethod,
    requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    switch reply {
    case .prepared(let prepared):
        return MHD_queue_response(connection, UInt32(prepared.status), prepared.pointer)
    case .response(let response):
        return queue(response, connection)
    case .deferred(let work):
        let state: PendingRequest
        if let existing = requestContext.pointee, !RequestMarker.isMarker(existing) {
            state = Unmanaged<PendingRequest>.fromOpaque(existing).takeUnretainedValue()
        } else {
            state = PendingRequest(method: method)
            // Released in `requestCompleted`.
            requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        }
        guard core.suspend(connection, state) else {
            return queue(core.handler.refuse(.serverStopping), connection)
        }
        core.deferred.add(1, ordering: .relaxed)
        Task {
            let response = await work()
            core.finishDeferred(state, response)
            core.deferred.subtract(1, ordering: .releasing)
        }
        return MHD_Result.YES
    }
}

/// Queues a per-request response; our reference is dropped at once (libmicrohttpd keeps its own).
private func queue(_ response: HTTPResponse, _ connection: OpaquePointer) -> MHD_Result {
    guard let built = makeResponse(headers: response.headers, body: response.body) else { return MHD_Result.NO }
    defer { MHD_destroy_response(built) }
    return MHD_queue_response(connection, UInt32(response.status), built)
}

/// `MHD_RequestCompletedCallback`: the request is over (answered, or the connection is gone). Called for every
/// request whose target callback ran, including those libmicrohttpd refused itself before the access handler.
private let requestCompleted: MHD_RequestCompletedCallback = { cls, connection, requestContext, _ in
    guard let cls else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    if let connection { connectionClock(connection)?.enter(.awaitingHeaders) }
    guard let requestContext, let context = requestContext.pointee else { return }
    requestContext.pointee = nil
    let marker = RequestMarker(context)
    // A target marker: libmicrohttpd answered before the access handler's first call (which counts in-flight).
    guard marker?.kind != .target else { return }
    core.inFlight.subtract(1, ordering: .releasing)
    if marker == nil {
        // Pairs with the passRetained of the access handler's first call (or of a deferred reply).
        let state = Unmanaged<PendingRequest>.fromOpaque(context).takeRetainedValue()
        state.release(core: core)
    }
}

/// Calls `body` with a `sockaddr` for `host:port` and whether it is IPv6.
private func withSocketAddress<R>(
    _ host: String, _ port: UInt16, _ body: (UnsafeMutableRawPointer, Bool) -> R
) throws(MicroHTTPDError) -> R {
    var v4 = sockaddr_in()
    v4.sin_family = sa_family_t(AF_INET)
    v4.sin_port = port.bigEndian
    if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
        return withUnsafeMutablePointer(to: &v4) { body(UnsafeMutableRawPointer($0), false) }
    }
    var v6 = sockaddr_in6()
    v6.sin6_family = sa_family_t(AF_INET6)
    v6.sin6_port = port.bigEndian
    if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
        return withUnsafeMutablePointer(to: &v6) { body(UnsafeMutableRawPointer($0), true) }
    }
    throw .invalidHost(host)
}

func monotonicSeconds() -> Double { Double(monotonicNanoseconds()) / 1e9 }
