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
    /// Connections handed to libmicrohttpd so far (``HTTPServer``'s listener), and those it reported started: the
    /// difference is handed off and not yet taken by a worker (``connectionsUntaken``).
    let connectionsHandedOff = Atomic<Int>(0)
    let connectionsStarted = Atomic<Int>(0)
    /// Set when the server stops: the daemons' accept policy closes every connection accepted from then on.
    let refusingConnections = Atomic<Bool>(false)
    /// When the last connection was handed off (the clock's monotonic milliseconds).
    private let lastHandoffMillis = Atomic<Int>(0)
    let watchdog: SlowClientWatchdog
    let suspensions: SuspendedConnections
    /// Resumes the connections of paced answers (thousands of long-polls one change wakes) a slice at a time from
    /// a thread of its own, so that the worker threads serve other connections between slices.
    let resumer: PacedResumer

    init(handler: any HTTPHandler, configuration: HTTPServerConfiguration) {
        self.handler = handler
        self.configuration = configuration
        let suspensions = SuspendedConnections()
        self.suspensions = suspensions
        self.resumer = PacedResumer(
            name: "tabserver-resume", slice: { configuration.resumeSlice(suspended: suspensions.suspended) },
            patienceSeconds: configuration.resumePatienceSeconds, intervalSeconds: configuration.resumeIntervalSeconds,
            queued: { suspensions.queued }, clock: configuration.clock
        ) { limit in suspensions.resumeQueued(limit: limit) }
        self.watchdog = SlowClientWatchdog(
            headerDeadlineSeconds: configuration.headerDeadlineSeconds, bodyDeadlineSeconds: configuration.bodyDeadlineSeconds,
            handshakeDeadlineSeconds: configuration.tlsHandshakeDeadlineSeconds, clock: configuration.clock)
    }

    /// Counts a connection about to be handed to libmicrohttpd.
    func handingOff() {
        lastHandoffMillis.store(Int(configuration.clock.seconds * 1000), ordering: .relaxed)
        connectionsHandedOff.add(1, ordering: .acquiringAndReleasing)
    }

    /// libmicrohttpd refused the connection just counted (it closed it).
    func handOffFailed() { connectionsHandedOff.subtract(1, ordering: .acquiringAndReleasing) }

    /// Connections handed off that no worker has taken yet: the listener counts them with the daemon's own, which
    /// grows only once a worker takes one. libmicrohttpd 0.9.75 must never find a worker at its limit when it takes
    /// one: that path (`new_connection_process_`) leaves the worker's cleanup mutex locked and the worker deadlocks,
    /// so the daemon's limit is set above the server's (``HTTPServerConfiguration/daemonConnectionLimit``) and the
    /// listener keeps to the server's. A connection libmicrohttpd drops before it starts (out of memory) is never
    /// reported: a second after the last handoff none is counted any more.
    var connectionsUntaken: Int {
        let now = Int(configuration.clock.seconds * 1000)
        guard now - lastHandoffMillis.load(ordering: .relaxed) < 1000 else { return 0 }
        return max(0, connectionsHandedOff.load(ordering: .acquiring) - connectionsStarted.load(ordering: .acquiring))
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
    /// (the caller answers at once then).
    func suspend(_ connection: OpaquePointer, _ state: PendingRequest) -> Bool { suspensions.suspend(connection, state) }

    /// Queues `response` for a deferred reply and resumes its connection, unless a stop already did: at once, or
    /// for a ``HTTPResponse/Resumption/paced`` answer in its turn on the resumer's thread (``resumer``).
    func finishDeferred(_ state: PendingRequest, _ response: HTTPResponse) {
        if suspensions.finish(state, response) { resumer.ready() }
    }

    /// Answers every suspended connection with `answer` (those already answered and waiting for their paced resume
    /// keep their answer), resumes it, and refuses further suspensions. Returns how many were resumed.
    func resumeAllSuspended(answer: HTTPResponse) -> Int { suspensions.resumeAll(answer: answer) }

    /// A request's answer was taken by the access handler, or its request ended: if the resumer had resumed it, it
    /// counts as picked up.
    func noteAnswerTaken(_ state: PendingRequest) {
        if state.takeResumedByPacer() { resumer.pickedUp() }
    }
}

/// Connections suspended for deferred replies: those whose work runs, and those answered with a paced answer and
/// waiting for the resumer (``ServerCore/resumer``) to resume them a slice at a time.
///
/// Every connection here is resumed exactly once, by whoever takes it out of the table, and none after
/// ``resumeAll(answer:)`` (the stop resumes every one before `MHD_stop_daemon`, after which none may be).
///
/// Two locks: the table's, taken briefly by every suspension and answer, and `resuming`, held from the taking out
/// of one connection to the return of its `MHD_resume_connection`. That call waits for the worker's own lock, which
/// the worker holds while it walks its whole list of suspended connections (libmicrohttpd 0.9.75,
/// `resume_suspended_connections`): the thousands of woken requests that queue their answers take only the
/// table's lock, so they never wait for a walk; an immediate answer (a write's) waits for at most one resume of
/// the resumer's slice, not the whole slice; and a stop that holds `resuming` knows no resume is under way.
final class SuspendedConnections: Sendable {
    private let table = Mutex(SuspensionTable())
    private let resuming = Mutex(())
    /// Connections suspended now (running their work, or answered and waiting to be resumed), without a lock.
    private let suspendedNow = Atomic<Int>(0)

    /// Connections suspended now: running their work, or answered and waiting for their paced resume.
    var count: Int { table.withLock { $0.entries.count + $0.queued } }

    /// ``count`` without the table's lock (it may lag by the resumes under way).
    var suspended: Int { suspendedNow.load(ordering: .relaxed) }

    /// Answered and waiting for their paced resume.
    var queued: Int { table.withLock { $0.queued } }

    /// Under the table's lock, so that ``resumeAll(answer:)`` sees it suspended.
    func suspend(_ connection: OpaquePointer, _ state: PendingRequest) -> Bool {
        table.withLock { table in
            guard !table.closed else { return false }
            table.entries[ObjectIdentifier(state)] = SuspendedConnection(pointer: connection, state: state)
            MHD_suspend_connection(connection)
            suspendedNow.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Gives `state` its answer. An immediate answer's connection is resumed now; a paced one's is queued: true
    /// then (the caller tells the resumer, outside these locks).
    func finish(_ state: PendingRequest, _ response: HTTPResponse) -> Bool {
        guard response.resumption == .paced else {
            resuming.withLock { _ in
                let entry = table.withLock { table in
                    let entry = table.entries.removeValue(forKey: ObjectIdentifier(state))
                    if entry != nil { state.setPending(response) }
                    return entry
                }
                // The next access-handler call (after the resume) queues `pending`.
                if let entry { resume(entry) }
            }
            return false
        }
        return table.withLock { table in
            guard let entry = table.entries.removeValue(forKey: ObjectIdentifier(state)) else { return false }
            state.setPending(response)
            table.enqueue(entry)
            return true
        }
    }

    /// Resumes at most `limit` queued connections, oldest first (the resumer's thread): how many, and whether more
    /// are queued. Each is marked so that its pickup is reported (``ServerCore/noteAnswerTaken(_:)``).
    func resumeQueued(limit: Int) -> (resumed: Int, more: Bool) {
        var resumed = 0
        while resumed < limit {
            let (found, more) = resuming.withLock { _ -> (Bool, Bool) in
                let (entry, more) = table.withLock { table -> (SuspendedConnection?, Bool) in
                    guard !table.closed, let entry = table.dequeue() else { return (nil, false) }
                    return (entry, table.queued > 0)
                }
                guard let entry else { return (false, false) }
                entry.state.markResumedByPacer()
                resume(entry)
                return (true, more)
            }
            if found { resumed += 1 }
            if !more { return (resumed, false) }
        }
        return (resumed, true)
    }

    func resumeAll(answer: HTTPResponse) -> Int {
        resuming.withLock { _ in
            let (queued, running) = table.withLock { table -> ([SuspendedConnection], [SuspendedConnection]) in
                table.closed = true
                var queued: [SuspendedConnection] = []
                while let entry = table.dequeue() { queued.append(entry) }
                defer { table.entries = [:] }
                return (queued, Array(table.entries.values))
            }
            // Answered, waiting for their paced resume: resumed now with their own answer.
            for entry in queued { resume(entry) }
            for entry in running {
                entry.state.setPending(answer)
                resume(entry)
            }
            return queued.count + running.count
        }
    }

    /// `MHD_resume_connection`, with `resuming` held and the entry out of the table.
    private func resume(_ entry: SuspendedConnection) {
        MHD_resume_connection(entry.pointer)
        suspendedNow.subtract(1, ordering: .relaxed)
    }
}

/// Connections suspended for deferred replies, by their request's ``PendingRequest``, and those answered and
/// waiting for their paced resume, in the order they were answered.
struct SuspensionTable {
    var entries: [ObjectIdentifier: SuspendedConnection] = [:]
    /// Answered, waiting for the resumer; `waiting[head...]` are queued.
    private var waiting: [SuspendedConnection] = []
    private var head = 0
    /// Set when a stop resumed everything: no suspension after that.
    var closed = false

    var queued: Int { waiting.count - head }

    mutating func enqueue(_ entry: SuspendedConnection) { waiting.append(entry) }

    mutating func dequeue() -> SuspendedConnection? {
        guard head < waiting.count else { return nil }
        let entry = waiting[head]
        head += 1
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: waiting.count <= 4096)
            head = 0
        } else if head >= 4096 && head * 2 >= waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        return entry
    }
}

/// A suspended connection handed to deferred work. Safety (`@unchecked Sendable`): the only call made with it
/// off libmicrohttpd's threads is `MHD_resume_connection`, which libmicrohttpd allows from any thread, made once
/// (by whoever takes the entry out of ``SuspendedConnections``) under its `resuming` lock, always before
/// `MHD_stop_daemon`.
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
    /// Set when the paced resumer resumed the connection, until its pickup is reported.
    private let resumedByPacer = Atomic<Bool>(false)

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

    /// The resumer resumed this request's connection: its pickup is to be reported.
    func markResumedByPacer() { resumedByPacer.store(true, ordering: .releasing) }

    /// Whether the resumer resumed this request's connection and its pickup was not yet reported (true once).
    func takeResumedByPacer() -> Bool {
        resumedByPacer.load(ordering: .acquiring) && resumedByPacer.exchange(false, ordering: .acquiringAndReleasing)
    }

    func takePending() -> HTTPResponse? {
        state.withLock { state in
            defer { state.pending = nil }
            return state.pending
        }
    }
}
