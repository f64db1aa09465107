internal import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: an internal thread pool with epoll, keep-alive, connection,
/// timeout and size limits, suspend/resume for deferred replies, and a graceful stop.
public final class HTTPServer: Sendable {
    /// The port the server listens on (the one the kernel picked when configured with 0).
    public let port: UInt16
    private let core: ServerCore
    private let daemon: DaemonHandle
    private let stopped = Mutex(false)

    /// Starts listening and serving with `handler`.
    /// - Throws: ``MicroHTTPDError/invalidHost(_:)`` or ``MicroHTTPDError/startFailed(host:port:)``.
    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) throws(MicroHTTPDError) {
        let core = ServerCore(handler: handler, configuration: configuration)
        // Retained for the daemon's callbacks; released in `stop()` after MHD_stop_daemon (or below on failure).
        let coreReference = Unmanaged.passRetained(core)
        let started = try withSocketAddress(configuration.host, configuration.port) { address, isIPv6 in
            var flags =
                MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
                | MHD_ALLOW_SUSPEND_RESUME.rawValue
            if isIPv6 { flags |= MHD_USE_IPv6.rawValue }
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
            ]
            // Always a pool, of at least two workers: libmicrohttpd 0.9.75's single polling thread (epoll or
            // poll) was measured here to stop reading ready connections above ~120 concurrent clients.
            options.append(
                MHD_OptionItem(option: MHD_OPTION.THREAD_POOL_SIZE, value: configuration.workerThreads, ptr_value: nil))
            if configuration.perIPConnectionLimit > 0 {
                options.append(
                    MHD_OptionItem(
                        option: MHD_OPTION.PER_IP_CONNECTION_LIMIT, value: configuration.perIPConnectionLimit,
                        ptr_value: nil))
            }
            options.append(MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil))
            return options.withUnsafeBufferPointer { items in
                cmhd_start_daemon(
                    flags, configuration.port, accessHandler, coreReference.toOpaque(), items.baseAddress)
            }
        }
        guard let started else {
            coreReference.release()  // pairs with passRetained above: the daemon never started
            throw .startFailed(host: configuration.host, port: configuration.port)
        }
        self.core = core
        self.daemon = DaemonHandle(pointer: started)
        self.port = cmhd_bound_port(started)
        core.watchdog.start()
    }

    /// Requests begun and not yet completed.
    public var requestsInFlight: Int { core.inFlight.load(ordering: .relaxed) }

    /// Stops gracefully: stops accepting, lets requests in flight finish (up to the configured grace),
    /// resumes and finishes deferred work, then closes every connection. Safe to call more than once.
    public func stop() {
        let first = stopped.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let listener = MHD_quiesce_daemon(daemon.pointer)
        let deadline = monotonicSeconds() + core.configuration.stopGraceSeconds
        while core.inFlight.load(ordering: .acquiring) > 0 || core.deferred.load(ordering: .acquiring) > 0 {
            if monotonicSeconds() > deadline, core.deferred.load(ordering: .acquiring) == 0 { break }
            usleep(5_000)
        }
        core.watchdog.stop()
        MHD_stop_daemon(daemon.pointer)
        if listener >= 0 { close(listener) }
        // Pairs with Unmanaged.passRetained in init: no callback can run after MHD_stop_daemon.
        Unmanaged.passUnretained(core).release()
    }

    deinit { stop() }
}

/// The daemon pointer. Safety (`@unchecked Sendable`): only libmicrohttpd's thread-safe entry points
/// (`MHD_quiesce_daemon`, `MHD_stop_daemon` once, guarded by `HTTPServer.stopped`) use it.
private struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// What the C callbacks reach through their `cls` pointer.
final class ServerCore: Sendable {
    let handler: any HTTPHandler
    let configuration: HTTPServerConfiguration
    /// Requests whose headers arrived and whose completion libmicrohttpd has not yet reported.
    let inFlight = Atomic<Int>(0)
    /// Deferred replies still running (their connections are suspended).
    let deferred = Atomic<Int>(0)
    let watchdog: SlowClientWatchdog

    init(handler: any HTTPHandler, configuration: HTTPServerConfiguration) {
        self.handler = handler
        self.configuration = configuration
        self.watchdog = SlowClientWatchdog(
            headerDeadlineSeconds: configuration.headerDeadlineSeconds, bodyDeadlineSeconds: configuration.bodyDeadlineSeconds)
    }
}

/// Per-request state of a request that carries a body or waits for deferred work. Created on the
/// access handler's first call (`Unmanaged.passRetained`), released in `requestCompleted`.
final class RequestContext: Sendable {
    let method: HTTPMethod
    private let state = Mutex(State())

    struct State {
        var body: [UInt8] = []
        var tooLarge = false
        var pending: HTTPResponse?
    }

    init(method: HTTPMethod) { self.method = method }

    /// Appends an upload chunk unless the body would exceed `limit`; false once it has.
    func append(_ chunk: UnsafeRawBufferPointer, limit: Int) {
        state.withLock { state in
            if state.tooLarge || state.body.count + chunk.count > limit {
                state.tooLarge = true
                state.body = []
            } else {
                state.body.append(contentsOf: chunk)
            }
        }
    }

    var isTooLarge: Bool { state.withLock { $0.tooLarge } }
    var body: [UInt8] { state.withLock { $0.body } }

    func setPending(_ response: HTTPResponse) { state.withLock { $0.pending = response } }
    func takePending() -> HTTPResponse? {
        state.withLock { state in
            defer { state.pending = nil }
            return state.pending
        }
    }
}

/// A suspended connection handed to deferred work. Safety (`@unchecked Sendable`): the only call made
/// with it off libmicrohttpd's threads is `MHD_resume_connection`, which libmicrohttpd allows from any thread.
private struct SuspendedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The `*req_cls` of a GET or HEAD on the first call: "headers seen, answer on the next call". Never dereferenced.
private var headersSeenMarker: UnsafeMutableRawPointer {
    // Safety: bit pattern 1 is non-null and never a valid object address; it is only compared.
    UnsafeMutableRawPointer(bitPattern: 1).unsafelyUnwrapped
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
/// First call: headers are in; check the limits and set `*req_cls`. Later calls: body chunks, then the
/// reply (answering on the first call would make libmicrohttpd drop keep-alive).
private let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, uploadData, uploadDataSize, requestContext in
    guard let cls, let connection, let url, let method, let uploadDataSize, let requestContext else {
        return MHD_Result.NO
    }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let configuration = core.configuration
    guard let context = requestContext.pointee else {
        core.inFlight.add(1, ordering: .relaxed)
        if headerBlockSize(connection, url) > configuration.maxHeaderBytes {
            return queue(core.handler.reject(.headerBlockTooLarge(limit: configuration.maxHeaderBytes)), connection)
        }
        let parsed = parseMethod(method)
        let clock = connectionClock(connection)
        if parsed == .get || parsed == .head {
            clock?.enter(.answering)
            requestContext.pointee = headersSeenMarker
            return MHD_Result.YES
        }
        clock?.enter(.receivingBody)
        if let length = MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, "Content-Length"),
            let declared = Int(String(cString: length)), declared > configuration.maxBodyBytes
        {
            return queue(core.handler.reject(.bodyTooLarge(limit: configuration.maxBodyBytes)), connection)
        }
        // Released in `requestCompleted`.
        requestContext.pointee = Unmanaged.passRetained(RequestContext(method: parsed)).toOpaque()
        return MHD_Result.YES
    }
    if context == headersSeenMarker {
        if uploadDataSize.pointee > 0 {
            uploadDataSize.pointee = 0  // a body on GET or HEAD has no meaning here: read and drop it
            return MHD_Result.YES
        }
        let request = HTTPRequest(method: parseMethod(method), body: [], connection: connection, url: url)
        return reply(core.handler.handle(request), core: core, connection: connection, requestContext: requestContext)
    }
    let state = Unmanaged<RequestContext>.fromOpaque(context).takeUnretainedValue()
    if let pending = state.takePending() {
        return queue(pending, connection)
    }
    if uploadDataSize.pointee > 0 {
        if let uploadData {
            state.append(
                UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee),
                limit: configuration.maxBodyBytes)
        }
        uploadDataSize.pointee = 0
        return MHD_Result.YES
    }
    connectionClock(connection)?.enter(.answering)
    if state.isTooLarge {
        return queue(core.handler.reject(.bodyTooLarge(limit: configuration.maxBodyBytes)), connection)
    }
    let request = HTTPRequest(method: state.method, body: state.body, connection: connection, url: url)
    return reply(core.handler.handle(request), core: core, connection: connection, requestContext: requestContext)
}

private func reply(
    _ reply: HTTPReply, core: ServerCore, connection: OpaquePointer,
    requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    switch reply {
    case .prepared(let prepared):
        return MHD_queue_response(connection, UInt32(prepared.status), prepared.pointer)
    case .response(let response):
        return queue(response, connection)
    case .deferred(let work):
        let state: RequestContext
        if let existing = requestContext.pointee, existing != headersSeenMarker {
            state = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
        } else {
            state = RequestContext(method: .get)
            // Released in `requestCompleted`.
            requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        }
        core.deferred.add(1, ordering: .relaxed)
        let suspended = SuspendedConnection(pointer: connection)
        MHD_suspend_connection(connection)
        Task {
            let response = await work()
            state.setPending(response)
            // The next access-handler call (after the resume) queues `pending`.
            MHD_resume_connection(suspended.pointer)
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

/// `MHD_RequestCompletedCallback`: the request is over (answered, or the connection is gone).
private let requestCompleted: MHD_RequestCompletedCallback = { cls, connection, requestContext, _ in
    guard let cls else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    core.inFlight.subtract(1, ordering: .releasing)
    if let connection { connectionClock(connection)?.enter(.awaitingHeaders) }
    if let requestContext, let context = requestContext.pointee, context != headersSeenMarker {
        // Pairs with the passRetained of the access handler's first call (or of a deferred reply).
        Unmanaged<RequestContext>.fromOpaque(context).release()
        requestContext.pointee = nil
    }
}

/// The request line's target plus every header field, in bytes (the header block, roughly as sent).
private func headerBlockSize(_ connection: OpaquePointer, _ url: UnsafePointer<CChar>) -> Int {
    var total = strlen(url)
    _ = MHD_get_connection_values(
        connection, MHD_ValueKind.HEADER_KIND,
        { cls, _, key, value in
            let sum = cls.unsafelyUnwrapped.assumingMemoryBound(to: Int.self)
            sum.pointee += (key.map { strlen($0) } ?? 0) + (value.map { strlen($0) } ?? 0) + 4
            return MHD_Result.YES
        }, &total)
    return total
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
