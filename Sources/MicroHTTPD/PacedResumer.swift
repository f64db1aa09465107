internal import CMicroHTTPD
import Synchronization
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// Hands out queued work in bounded slices from a thread of its own, so that a burst (the thousands of long-polls
/// one change wakes) reaches its consumer a slice at a time and whatever else the consumer serves meanwhile (a
/// probe, a write) waits behind about one slice, not behind the whole burst.
///
/// The owner keeps the items and says when there are some (``ready()``). The thread asks it to resume at most the
/// slice less the items resumed and not yet picked up (`resume(n)` returns how many it resumed and whether more
/// are queued); the consumer reports each item it picks up (``pickedUp(_:)``), and once the unpicked items fall to
/// half a slice the thread sends the next one. No wait is unbounded: a slice not picked up down to half within
/// ``patienceSeconds`` is counted as gone and the next one goes (a slow or stalled consumer gets work later, never
/// none), and the thread never waits for the cooperative pool or anything but the consumer's pickups.
///
/// The thread starts when work first arrives and ends after ``idleSeconds`` without any; when it cannot be started,
/// ``ready()`` resumes everything queued on the caller's thread, unpaced, so nothing waits for it.
///
/// Safety (`@unchecked Sendable`): `mutex` and `condition` are pthread objects allocated in `init` and freed in
/// `deinit` (the thread holds a strong reference while it runs); `pending`, `running`, `waitingForWork` and
/// `waitingForPickup` are read and written only with `mutex` held; everything else is immutable or atomic.
public final class PacedResumer: @unchecked Sendable {
    /// How long a slice may stay unpicked before the next one goes anyway, in seconds.
    public let patienceSeconds: Double
    /// How long the thread waits for work before it ends, in seconds.
    public let idleSeconds: Double
    /// The least time between two slices while fewer items are queued than a slice has room for, in seconds: when
    /// work trickles in (answers made one by one on the cooperative pool), items queued meanwhile go together rather
    /// than in slices of one or two.
    public let intervalSeconds: Double
    private let sliceSize: @Sendable () -> Int
    private let queuedCount: @Sendable () -> Int
    private let resume: @Sendable (Int) -> (resumed: Int, more: Bool)
    private let name: String
    /// The clock slices are timed on (its monotonic reading).
    private let clock: TimeSource

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Items resumed and not yet picked up (never below 0).
    private let outstanding = Atomic<Int>(0)
    /// Half the slice in use: the next slice goes once `outstanding` is at most this.
    private let lowWater = Atomic<Int>(0)
    /// Under `mutex`: work was announced since the thread last asked for it.
    private var pending = false
    /// Under `mutex`: the thread is running (or starting).
    private var running = false
    /// Under `mutex`: the thread waits for `outstanding` to fall to `lowWater`.
    private var waitingForPickup = false
    /// Under `mutex`: the thread waits for work.
    private var waitingForWork = false
    /// Work was announced and the thread has not yet begun to take it (``ready()``'s fast path).
    private let announced = Atomic<Bool>(false)
    private let counters = Mutex(Counters())

    /// What the resumer did, for tests and measurements.
    public struct Counters: Sendable, Equatable {
        /// Slices sent (calls of `resume` by the thread).
        public var slices = 0
        /// Items resumed (by the thread, or unpaced when it could not be started).
        public var resumed = 0
        /// The largest slice asked for.
        public var largestSlice = 0
        /// The most items resumed and not yet picked up, seen just after a slice went.
        public var mostOutstanding = 0
        /// Slices sent because the previous one was not picked up within the patience.
        public var impatient = 0
        /// Threads started.
        public var threads = 0
        /// Times ``ready()`` resumed everything itself because no thread could be started.
        public var unpaced = 0
    }

    /// - Parameters:
    ///   - name: the thread's name (at most 15 bytes are kept: `top -H` and perf show it).
    ///   - slice: items resumed at most while earlier ones are not yet picked up (at least 1), asked before each
    ///     slice (it may follow the backlog).
    ///   - patienceSeconds: how long an unpicked slice holds the next one back.
    ///   - idleSeconds: how long the thread waits for work before it ends.
    ///   - intervalSeconds: the least time between two slices while fewer items are queued than a slice has room
    ///     for (a backlog goes at once).
    ///   - queued: how many items the owner has queued (asked only with an interval).
    ///   - clock: the clock slices are timed on (its monotonic reading).
    ///   - resume: resumes at most `n` queued items (on the resumer's thread); returns how many it resumed and
    ///     whether more are queued. Each item it resumes is to be reported to ``pickedUp(_:)`` once.
    public init(
        name: String, slice: @escaping @Sendable () -> Int, patienceSeconds: Double = 0.05, idleSeconds: Double = 2,
        intervalSeconds: Double = 0, queued: @escaping @Sendable () -> Int = { 0 }, clock: TimeSource = .system,
        resume: @escaping @Sendable (Int) -> (resumed: Int, more: Bool)
    ) {
        self.name = name
        self.clock = clock
        self.sliceSize = slice
        self.queuedCount = queued
        self.patienceSeconds = patienceSeconds
        self.idleSeconds = idleSeconds
        self.intervalSeconds = intervalSeconds
        self.resume = resume
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    /// A resumer with a fixed slice.
    public convenience init(
        name: String, slice: Int, patienceSeconds: Double = 0.05, idleSeconds: Double = 2, intervalSeconds: Double = 0,
        clock: TimeSource = .system, resume: @escaping @Sendable (Int) -> (resumed: Int, more: Bool)
    ) {
        self.init(
            name: name, slice: { slice }, patienceSeconds: patienceSeconds, idleSeconds: idleSeconds,
            intervalSeconds: intervalSeconds, clock: clock, resume: resume)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// What the resumer did so far.
    public var counted: Counters { counters.withLock { $0 } }

    /// Whether its thread runs (or is starting): false once the thread ended after `idleSeconds` without work.
    public var isRunning: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return running
    }

    /// Items resumed by the thread and not yet picked up.
    public var unpicked: Int { outstanding.load(ordering: .relaxed) }

    /// Work was queued: the thread asks `resume` for it (started if it is not running). Call it without holding a
    /// lock that `resume` takes (with no thread, `resume` runs here).
    public func ready() {
        // Thousands of answers call this in a wake: once one announced work the thread has not yet begun to take,
        // the others need not lock (the thread clears `announced` before it reads the owner's queue).
        if announced.exchange(true, ordering: .acquiringAndReleasing) { return }
        pthread_mutex_lock(mutex)
        pending = true
        let start = !running
        if start {
            running = true
        } else if waitingForWork {
            pthread_cond_signal(condition)
        }
        pthread_mutex_unlock(mutex)
        guard start else { return }
        if startThread() { return }
        pthread_mutex_lock(mutex)
        running = false
        pthread_mutex_unlock(mutex)
        // No thread: everything queued now, on this thread, unpaced (as before pacing existed).
        announced.store(false, ordering: .releasing)
        var resumed = 0
        while true {
            let (count, more) = resume(Int.max)
            resumed += count
            if !more { break }
        }
        counters.withLock { counters in
            counters.unpaced += 1
            counters.resumed += resumed
        }
    }

    /// `count` items the thread resumed reached their consumer.
    public func pickedUp(_ count: Int = 1) {
        var current = outstanding.load(ordering: .relaxed)
        while true {
            let next = max(0, current - count)
            let (exchanged, original) = outstanding.compareExchange(
                expected: current, desired: next, ordering: .acquiringAndReleasing)
            if exchanged {
                let low = lowWater.load(ordering: .relaxed)
                if current > low && next <= low { wakeForPickup() }
                return
            }
            current = original
        }
    }

    private func wakeForPickup() {
        pthread_mutex_lock(mutex)
        if waitingForPickup { pthread_cond_signal(condition) }
        pthread_mutex_unlock(mutex)
    }

    private func startThread() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()  // released by the thread when it ends
        var handle = pthread_t()
        guard pthread_create(&handle, nil, pacedResumerMain, context) == 0 else {
            Unmanaged<PacedResumer>.fromOpaque(context).release()
            return false
        }
        pthread_detach(handle)
        counters.withLock { $0.threads += 1 }
        return true
    }

    /// The thread: waits for work, then sends slices while the owner has more, each once the previous ones are
    /// picked up down to half a slice (or the patience ran out), and while little is queued `intervalSeconds` after
    /// the previous one. Ends after `idleSeconds` without work.
    fileprivate func run() {
        cmhd_name_current_thread(name)
        var lastSlice = -Double.infinity
        pthread_mutex_lock(mutex)
        while true {
            if !pending {
                waitingForWork = true
                waitLocked(seconds: idleSeconds)
                waitingForWork = false
                if !pending {
                    running = false
                    announced.store(false, ordering: .releasing)
                    pthread_mutex_unlock(mutex)
                    return
                }
            }
            pending = false
            var more = true
            while more {
                let slice = max(1, sliceSize())
                let low = slice / 2
                lowWater.store(low, ordering: .relaxed)
                if outstanding.load(ordering: .acquiring) > low {
                    let deadline = clock.seconds + patienceSeconds
                    waitingForPickup = true
                    while outstanding.load(ordering: .acquiring) > low {
                        let left = deadline - clock.seconds
                        if left <= 0 { break }
                        waitLocked(seconds: left)
                    }
                    waitingForPickup = false
                    if outstanding.load(ordering: .acquiring) > low {
                        // Not picked up within the patience: counted as gone, so that a stalled consumer slows the
                        // next slices without stopping them.
                        outstanding.store(0, ordering: .releasing)
                        counters.withLock { $0.impatient += 1 }
                    }
                }
                var room = max(1, slice - outstanding.load(ordering: .acquiring))
                // Answers trickling in (fewer queued than there is room for) go together, at most one slice an
                // interval; a backlog goes at once, while the consumer still works on the previous slice.
                let wait = lastSlice + intervalSeconds - clock.seconds
                if wait > 0, queuedCount() < room {
                    pthread_mutex_unlock(mutex)
                    usleep(UInt32(wait * 1e6))
                    pthread_mutex_lock(mutex)
                    room = max(1, slice - outstanding.load(ordering: .acquiring))
                }
                lastSlice = clock.seconds
                // Counted before the items go, so that a pickup never finds fewer outstanding than it reports.
                outstanding.add(room, ordering: .acquiringAndReleasing)
                pthread_mutex_unlock(mutex)
                // Before the owner's queue is read: work queued from now on is announced again.
                announced.store(false, ordering: .releasing)
                let (resumed, hasMore) = resume(room)
                let unused = room - min(max(resumed, 0), room)
                if unused > 0 { pickedUp(unused) }
                counters.withLock { counters in
                    counters.slices += 1
                    counters.resumed += resumed
                    counters.largestSlice = max(counters.largestSlice, slice)
                    counters.mostOutstanding = max(counters.mostOutstanding, outstanding.load(ordering: .relaxed))
                }
                pthread_mutex_lock(mutex)
                more = hasMore
            }
        }
    }

    /// `pthread_cond_timedwait` on the monotonic clock for at most `seconds`; `mutex` is held.
    private func waitLocked(seconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + max(0, seconds)
        var until = timespec()
        until.tv_sec = Int(total)
        until.tv_nsec = Int((total - Double(Int(total))) * 1e9)
        _ = pthread_cond_timedwait(condition, mutex, &until)
    }
}

private let pacedResumerMain: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { context in
    guard let context else { return nil }
    // Pairs with the passRetained in `startThread()`.
    let resumer = Unmanaged<PacedResumer>.fromOpaque(context).takeRetainedValue()
    resumer.run()
    return nil
}
