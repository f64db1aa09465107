internal import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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
