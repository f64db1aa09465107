import Dispatch
import MicroHTTPD
import Synchronization
import TabStore

/// One change the publisher made visible: a stored layout or strings version, at a sequence number.
struct ChangeEvent: Sendable, Equatable {
    enum Kind: String, Sendable {
        case layout, strings, rollout, promote
        case changeRequest = "change-request"
        /// A version revoked or un-revoked (``Changes/event(_:)``).
        case revoke
    }

    var kind: Kind
    /// The account (layout changes).
    var account: String?
    /// The environment it was published in (set by ``Publisher/publish(in:served:_:)`` for every event).
    var environment: String = ""

    /// The locale (strings changes).
    var locale: String?
    var version: Int
    /// The version's tag, as `GET …/layout` (or `…/strings/{locale}`) gives it.
    var etag: String
    var author: String?
    var atMillis: Int64
    var deleted: Bool
    /// The publication that made it visible.
    var sequence: UInt64
    /// The accounts whose served layouts may have changed (the account and every layout extending it); nil:
    /// every account (a strings table).
    var affected: Set<String>?
    /// The event's `data` when it is not a version's (a rollout's change, ``RolloutEvent``).
    var data: [UInt8]? = nil
}

/// The one writer of snapshots. Each change runs on the publisher's own serial queue, against the latest
/// snapshot, off the read path; its result is published with the next sequence number and the change's events
/// go to the long-poll waiters and the change feed, in that one order. Readers load the published snapshot
/// under a lock that only guards the reference (no compile ever runs inside it).
final class Publisher: Sendable {
    private let published: Mutex<Snapshot>
    private let publishedSequence = Atomic<UInt64>(1)
    private let queue = DispatchQueue(label: "tabserver.publisher")
    let waiters = ChangeWaiters()
    let feed = ChangeFeed(capacity: 1024)
    /// Signalled by every publication: a background job with nothing to do waits on it rather than waking to look.
    let publications = Wakeup()
    /// Signalled by every publication that announces a change request (``Changes/announce(_:)``): the schedule of
    /// change requests sleeps on it between its reads.
    let changeRequests = Wakeup()

    /// Purges the caches in front of what each publication made stale (none configured: nil).
    let purger: CachePurger?

    init(_ first: Snapshot, purger: CachePurger? = nil) {
        published = Mutex(first.published(as: 1))
        self.purger = purger
    }

    /// The snapshot requests are served from.
    var snapshot: Snapshot { published.withLock { $0 } }

    /// The published snapshot's sequence number, without taking its lock (set before a writer hears back).
    var sequence: UInt64 { publishedSequence.load(ordering: .acquiring) }

    /// Runs `change` against the latest snapshot on the publisher's queue. When it returns a new snapshot, that
    /// snapshot is published with the next sequence number and `events` (stamped with it) are delivered.
    /// - Returns: the snapshot published after the change (the current one when nothing changed).
    @discardableResult
    func publish(_ change: @escaping @Sendable (Snapshot) -> (Snapshot, [ChangeEvent])?) async -> Snapshot {
        await withCheckedContinuation { continuation in
            queue.async {
                let base = self.snapshot
                guard let (next, events) = change(base) else {
                    continuation.resume(returning: base)
                    return
                }
                let sequence = base.sequence + 1
                let stamped = next.published(as: sequence)
                self.published.withLock { $0 = stamped }
                self.publishedSequence.store(sequence, ordering: .releasing)
                let delivered = events.map { event in
                    var event = event
                    event.sequence = sequence
                    return event
                }
                // The feed before the writer's answer (a reader that asks right after the write finds its event); the
                // writer before the (possibly thousands of) woken long-polls, so that its answer is queued first.
                self.feed.append(delivered)
                self.publications.signal()
                if delivered.contains(where: { $0.kind == .changeRequest }) { self.changeRequests.signal() }
                continuation.resume(returning: stamped)
                self.waiters.wake(delivered, sequence: sequence)
                // Last, and in the background: the change is stored and published, and no answer waits for a cache.
                self.purger?.purge(after: delivered)
            }
        }
    }
}

/// Held long-polls, by account. A publication wakes the requests of the accounts it affected (all of them for
/// a strings table); each woken request compares its own representation again and waits on if it is unchanged.
///
/// Deadlines are kept in buckets of ``tick`` and ended by one sweeping task while any request waits, not by a
/// sleeping task per request: that task and its sleep were a kilobyte or more of every held request's memory
/// (docs/performance.md). The sweeper sleeps until the earliest bucket's tick (a wait with an earlier deadline wakes
/// it sooner), not from tick to tick: a server holding polls is not woken twenty times a second to find none due.
/// A wait ends at its deadline or up to one tick after it, never before.
///
/// Woken requests (by a change, their deadline or the stop) are resumed by a thread of their own a slice at a
/// time (``PacedResumer``): at most ``slice`` of them wait for the cooperative pool at once, so that a write, a
/// readiness probe or any other deferred request that needs the pool during a wake of thousands waits behind a
/// slice, not behind all of them. The pacing never waits for the pool without a deadline (the pacer's patience).
final class ChangeWaiters: Sendable {
    /// Why a wait ended.
    enum Wake: Sendable {
        case changed, timedOut, stopping
    }

    /// The granularity of deadlines.
    static let tick = Duration.milliseconds(50)

    /// What a waiting request is resumed with: why, and whether the pacing thread resumed it (its start is then
    /// reported to the pacer).
    fileprivate struct Resumed: Sendable {
        let wake: Wake
        let paced: Bool
    }

    private struct State {
        var byAccount: [String: [UInt64: CheckedContinuation<Resumed, Never>]] = [:]
        /// The waits whose deadline falls in each tick (by tick number from `origin`, rounded up); a wait woken
        /// earlier stays listed until its tick is swept (it is not found in `byAccount` then).
        var deadlines: [Int64: [(account: String, id: UInt64)]] = [:]
        var sweeping = false
        /// The tick the sweeper sleeps until (while `sweeping`).
        var sweeperDue: Int64 = .max
        var nextID: UInt64 = 0
        var sequence: UInt64 = 0
        var stopping = false
        var held = 0
    }

    private let state = Mutex(State())
    private let origin = ContinuousClock.now
    /// Ends the sweeper's sleep early: a wait due before the tick it sleeps until, or the stop.
    private let sweeperWake = Wakeup()
    private let sweepCount = Atomic<Int>(0)
    private let woken: WokenRequests
    private let pacer: PacedResumer

    /// Woken requests resumed at most while earlier ones have not started running again.
    let slice: Int

    /// - Parameters:
    ///   - slice: woken requests resumed at most while earlier ones have not yet run (default 32: each runs for
    ///     about 10 µs, so a request queued behind them on the cooperative pool waits well under a millisecond of
    ///     their work; a write or a readiness probe needs the pool several times).
    ///   - patienceSeconds: how long a slice that has not run holds the next one back.
    init(slice: Int = 32, patienceSeconds: Double = 0.02) {
        let woken = WokenRequests()
        self.woken = woken
        self.slice = slice
        pacer = PacedResumer(name: "tabserver-wake", slice: slice, patienceSeconds: patienceSeconds) { limit in
            woken.resume(limit: limit)
        }
    }

    /// Requests held now (for `/metrics`).
    var held: Int { state.withLock { $0.held } }

    /// Sweeps of deadlines made so far (for tests: one near each deadline, not one a tick).
    var sweeps: Int { sweepCount.load(ordering: .relaxed) }

    /// Requests woken and not yet resumed (waiting for their slice).
    var queued: Int { woken.count }

    /// What the pacing thread did so far (for tests).
    var paced: PacedResumer.Counters { pacer.counted }

    /// The tick `instant` falls in, rounded up (a deadline is never swept before it passes).
    private func tickNumber(_ instant: ContinuousClock.Instant, roundingUp: Bool) -> Int64 {
        let (seconds, attoseconds) = (instant - origin).components
        let tickAttoseconds = Int64(Self.tick.components.attoseconds) + Self.tick.components.seconds * 1_000_000_000_000_000_000
        let ticksPerSecond = 1_000_000_000_000_000_000 / tickAttoseconds
        let within = attoseconds / tickAttoseconds
        let partial = roundingUp && attoseconds % tickAttoseconds != 0 ? 1 : 0
        return seconds * ticksPerSecond + within + Int64(partial)
    }

    /// The instant tick number `tick` begins.
    private func instant(ofTick tick: Int64) -> ContinuousClock.Instant { origin + Self.tick * tick }

    /// Waits until a publication after `sequence` affects `account`, the deadline passes, or the service stops.
    func wait(account: String, after sequence: UInt64, until deadline: ContinuousClock.Instant) async -> Wake {
        let due = tickNumber(deadline, roundingUp: true)
        var startSweeper = false
        var wakeSweeper = false
        let resumed = await withCheckedContinuation { (continuation: CheckedContinuation<Resumed, Never>) in
            let immediate: Wake? = state.withLock { state in
                if state.stopping { return .stopping }
                if state.sequence > sequence { return .changed }
                if ContinuousClock.now >= deadline { return .timedOut }
                state.nextID += 1
                state.byAccount[account, default: [:]][state.nextID] = continuation
                state.deadlines[due, default: []].append((account, state.nextID))
                state.held += 1
                if !state.sweeping {
                    state.sweeping = true
                    state.sweeperDue = due
                    startSweeper = true
                } else if due < state.sweeperDue {
                    state.sweeperDue = due
                    wakeSweeper = true
                }
                return nil
            }
            if let immediate { continuation.resume(returning: Resumed(wake: immediate, paced: false)) }
            if startSweeper { sweepUntilNoneWait(firstDue: due) }
            if wakeSweeper { sweeperWake.signal() }
        }
        // Running again: the pacer may send the next slice.
        if resumed.paced { pacer.pickedUp() }
        return resumed.wake
    }

    /// Ends the waits whose deadline passed, at the earliest listed deadline's tick each time; returns when none
    /// waits (a later wait starts it again).
    private func sweepUntilNoneWait(firstDue: Int64) {
        let wake = sweeperWake
        Task { [weak self] in
            var due = firstDue
            while true {
                guard let sleep = self.map({ $0.instant(ofTick: due) - ContinuousClock.now }) else { return }
                if sleep > .zero { await wake.wait(upTo: sleep) }
                guard let self, let next = self.sweep() else { return }
                due = next
            }
        }
    }

    /// Answers the waits whose deadline passed with `.timedOut`; the earliest tick still listed, or nil (and no
    /// sweeper then) when no wait is left.
    private func sweep() -> Int64? {
        sweepCount.add(1, ordering: .relaxed)
        let now = tickNumber(ContinuousClock.now, roundingUp: false)
        var expired: [CheckedContinuation<Resumed, Never>] = []
        let more = state.withLock { state -> Int64? in
            for tick in state.deadlines.keys where tick <= now {
                for (account, id) in state.deadlines.removeValue(forKey: tick) ?? [] {
                    guard let found = state.byAccount[account]?.removeValue(forKey: id) else { continue }
                    if state.byAccount[account]?.isEmpty == true { state.byAccount[account] = nil }
                    state.held -= 1
                    expired.append(found)
                }
            }
            if state.byAccount.isEmpty {
                state.deadlines = [:]
                state.sweeping = false
                return nil
            }
            state.sweeperDue = state.deadlines.keys.min() ?? now + 1
            return state.sweeperDue
        }
        resumePaced(expired, .timedOut)
        return more
    }

    /// Wakes the requests of every account the events affected.
    func wake(_ events: [ChangeEvent], sequence: UInt64) {
        let woken = state.withLock { state -> [CheckedContinuation<Resumed, Never>] in
            state.sequence = max(state.sequence, sequence)
            var woken: [CheckedContinuation<Resumed, Never>] = []
            if events.contains(where: { $0.affected == nil }) {
                for waiting in state.byAccount.values { woken += waiting.values }
                state.byAccount = [:]
            } else {
                for account in Set(events.flatMap { $0.affected ?? [] }) {
                    if let waiting = state.byAccount.removeValue(forKey: account) { woken += waiting.values }
                }
            }
            state.held -= woken.count
            return woken
        }
        resumePaced(woken, .changed)
    }

    /// Ends every wait (they answer 304; the wake thread resumes them a slice at a time) and every later one before
    /// it starts.
    func stop() {
        let woken = state.withLock { state -> [CheckedContinuation<Resumed, Never>] in
            state.stopping = true
            let all = state.byAccount.values.flatMap(\.values)
            state.byAccount = [:]
            state.deadlines = [:]
            state.held = 0
            return all
        }
        sweeperWake.signal()  // the sweeper finds none waiting and ends
        resumePaced(woken, .stopping)
    }

    /// Hands `continuations` to the pacing thread, which resumes them with `wake` a slice at a time.
    private func resumePaced(_ continuations: [CheckedContinuation<Resumed, Never>], _ wake: Wake) {
        guard !continuations.isEmpty else { return }
        woken.append(continuations, Resumed(wake: wake, paced: true))
        pacer.ready()
    }
}

/// Requests woken and waiting for the pacing thread of ``ChangeWaiters``, oldest first.
private final class WokenRequests: Sendable {
    private struct Queue {
        var items: [(CheckedContinuation<ChangeWaiters.Resumed, Never>, ChangeWaiters.Resumed)] = []
        var head = 0
    }

    private let queue = Mutex(Queue())

    var count: Int { queue.withLock { $0.items.count - $0.head } }

    func append(_ continuations: [CheckedContinuation<ChangeWaiters.Resumed, Never>], _ value: ChangeWaiters.Resumed) {
        queue.withLock { queue in
            queue.items.reserveCapacity(queue.items.count + continuations.count)
            for continuation in continuations { queue.items.append((continuation, value)) }
        }
    }

    /// Resumes at most `limit` of them (outside the lock): how many, and whether more wait.
    func resume(limit: Int) -> (resumed: Int, more: Bool) {
        let (taken, more) = queue.withLock { queue in
            let end = queue.head + min(limit, queue.items.count - queue.head)
            let taken = Array(queue.items[queue.head..<end])
            queue.head = end
            if queue.head == queue.items.count {
                queue.items.removeAll(keepingCapacity: queue.items.count <= 4096)
                queue.head = 0
            } else if queue.head >= 4096 && queue.head * 2 >= queue.items.count {
                queue.items.removeFirst(queue.head)
                queue.head = 0
            }
            return (taken, queue.head < queue.items.count)
        }
        for (continuation, value) in taken { continuation.resume(returning: value) }
        return (taken.count, more)
    }
}

/// The last `capacity` change events, for `GET /v1/events` and its `Last-Event-ID` resume.
final class ChangeFeed: Sendable {
    private struct State {
        var events: [ChangeEvent] = []
        var listeners: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextListener: UInt64 = 0
        var stopping = false
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func append(_ events: [ChangeEvent]) {
        guard !events.isEmpty else { return }
        let listeners = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events += events
            if state.events.count > capacity { state.events.removeFirst(state.events.count - capacity) }
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.resume() }
    }

    /// What a reader that has seen everything up to `sequence` gets next.
    enum Catchup: Equatable {
        /// The events after `sequence` (maybe none yet).
        case events([ChangeEvent])
        /// `sequence` is older than the oldest event kept: the reader must start over.
        case reset
    }

    /// The events after `sequence` (nil: from now on), for a feed whose newest publication is `current`.
    ///
    /// `sequence` is the client's number: a position beyond `current` was given by another run of the server (or
    /// made up) and gets `.reset`, like one older than the events kept. No arithmetic here can overflow.
    func events(after sequence: UInt64?, current: UInt64) -> Catchup {
        state.withLock { state in
            guard let sequence else { return .events([]) }
            if sequence > current { return .reset }
            if let oldest = state.events.first, oldest.sequence - 1 > sequence { return .reset }
            return .events(state.events.filter { $0.sequence > sequence })
        }
    }

    /// The sequence number of the newest event kept (0 when none).
    var newest: UInt64 { state.withLock { $0.events.last?.sequence ?? 0 } }

    /// Waits until events after `sequence` arrive, the deadline passes or the feed stops.
    func waitForEvents(after sequence: UInt64, until deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state -> UInt64 in
            state.nextListener += 1
            return state.nextListener
        }
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.release(id)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.stopping || (state.events.last?.sequence ?? 0) > sequence { return true }
                state.listeners[id] = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }

    private func release(_ id: UInt64) {
        let listener = state.withLock { $0.listeners.removeValue(forKey: id) }
        listener?.resume()
    }

    /// Releases every listener now and from now on.
    func stop() {
        let listeners = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.stopping = true
            defer { state.listeners = [:] }
            return Array(state.listeners.values)
        }
        for listener in listeners { listener.resume() }
    }
}
