import Foundation
import Logging
import Synchronization
import TabStore
import TabTime
import TabWebhooks

/// Sends the outbox: at once when poked after a write, or when an attempt ends and frees a slot, at each retry this
/// worker scheduled, and otherwise every `pollInterval` (what another replica, or this one before a restart, left
/// due), it claims due deliveries from the store (leased, so each attempt is made by one worker across replicas),
/// checks the URL's addresses again, signs with the webhook's current secrets, POSTs through ``WebhookHTTPClient``
/// with the 10 s deadline, and records the outcome with the retry schedule; a `410 Gone` disables the webhook. At
/// most ``slots`` attempts are in flight, at most ``perWebhook`` of one webhook, and each slot is claimed again as
/// soon as it frees: a receiver that never answers holds its own two slots, never the others' deliveries. It runs on
/// its own task and Dispatch workers: request threads and the publisher never wait for it.
final class WebhookWorker: Sendable {
    let store: any TabStore
    let policy: AddressPolicy
    let resolver: any HostResolver
    let client = WebhookHTTPClient()
    let logger: Logger
    let counters = WebhookCounters()
    /// How long a claimed delivery is held before another worker may take it: past the attempt's deadline.
    static let leaseMillis: Int64 = 60_000
    /// Attempts in flight at once, over every webhook.
    static let slots = 16
    /// Attempts in flight at once for one webhook.
    static let perWebhook = 2
    /// The longest the worker sleeps between looks at the outbox when nothing pokes it and no retry of its own is due.
    let pollInterval: Duration
    /// How long delivered and failed deliveries are kept (`--webhook-retention`).
    let retention: Duration

    private let task = Mutex<Task<Void, Never>?>(nil)
    private let poked = Wakeup()
    /// Attempts in flight, by webhook id.
    private let inFlight = Mutex<[String: Int]>([:])
    /// The attempts' tasks, so that ``stop()`` waits for them to be recorded.
    private let attempts = Mutex<[UInt64: Task<Void, Never>]>([:])
    private let nextAttempt = Atomic<UInt64>(0)
    /// When the retries this worker scheduled fall due (Unix milliseconds).
    private let retries = Mutex(RetryTimes())

    /// What deliveries are claimed, signed and recorded at, and attempts timed with.
    let clock: TimeSource

    init(
        store: any TabStore, policy: AddressPolicy, resolver: any HostResolver, logger: Logger, pollInterval: Duration = .seconds(5),
        retention: Duration = .seconds(30 * 86_400), clock: TimeSource
    ) {
        self.store = store
        self.clock = clock
        self.policy = policy
        self.resolver = resolver
        self.logger = logger
        self.pollInterval = pollInterval
        self.retention = retention
    }

    /// Starts the loop (once).
    func start() {
        task.withLock { task in
            guard task == nil else { return }
            task = Task.detached { [self] in await self.run() }
        }
    }

    /// Stops the loop after the attempts in flight are recorded.
    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
        for attempt in attempts.withLock({ Array($0.values) }) { await attempt.value }
    }

    /// Stops the loop without waiting (attempts in flight finish and are recorded on their own).
    func cancel() { task.withLock { $0 }?.cancel() }

    /// Asks for a look at the outbox now (a write just committed deliveries).
    func poke() { poked.signal() }

    private func run() async {
        var lastPrune = -Double.infinity
        while !Task.isCancelled {
            if clock.seconds - lastPrune >= 3600 {
                lastPrune = clock.seconds
                await pruneFinished()
            }
            let looked = clock.unixMillis  // the claim below sees every retry due by now
            let started = await startDue()
            if started > 0 { continue }
            // Sleeps until its next retry falls due or the poll interval ends, unless a poke (a write, a freed slot)
            // cuts it short: an idle outbox wakes once an interval (a look every 50 ms for a poke woke a dispatch
            // thread 20 times a second; one every second still woke several).
            await poked.wait(upTo: retries.withLock { $0.sleep(atMillis: looked, atMost: pollInterval) })
        }
    }

    /// Claims due deliveries for the free slots and starts their attempts without waiting for them; returns how
    /// many were started. An attempt that ends pokes the loop, which claims for its slot at once.
    private func startDue() async -> Int {
        let now = clock.date
        let busy = inFlight.withLock { $0 }
        let free = Self.slots - busy.values.reduce(0, +)
        guard free > 0 else { return 0 }
        let claimed: [ClaimedDelivery]
        do throws(StoreError) {
            claimed = try await store.claimDueDeliveries(
                atMillis: now.millis, leaseMillis: Self.leaseMillis, limit: free, perWebhook: Self.perWebhook, busy: busy)
        } catch {
            logger.debug("webhook outbox not read: \(error)")
            return 0
        }
        for delivery in claimed {
            let webhook = delivery.webhook.id
            inFlight.withLock { $0[webhook, default: 0] += 1 }
            let number = nextAttempt.add(1, ordering: .relaxed).newValue
            // Made under the lock, so that the task's own removal (which takes the lock) comes after its insertion.
            attempts.withLock { tasks in
                tasks[number] = Task.detached { [self] in
                    await attempt(delivery)
                    inFlight.withLock { counts in
                        counts[webhook, default: 1] -= 1
                        if counts[webhook] == 0 { counts[webhook] = nil }
                    }
                    _ = attempts.withLock { $0.removeValue(forKey: number) }
                    poke()
                }
            }
        }
        return claimed.count
    }

    /// Deletes delivered and failed deliveries older than the retention, 500 a statement.
    private func pruneFinished() async {
        let before = clock.unixMillis - Int64(retention / .milliseconds(1))
        var pruned = 0
        for _ in 0..<100 {
            do throws(StoreError) {
                let deleted = try await store.pruneFinishedDeliveries(beforeMillis: before, limit: 500)
                pruned += deleted
                if deleted < 500 { break }
            } catch {
                logger.warning("pruning webhook deliveries failed: \(error)")
                break
            }
        }
        if pruned > 0 { logger.info("webhooks: \(pruned) delivered or failed deliveries past the retention pruned") }
    }

    /// One attempt of one delivery, recorded.
    func attempt(_ claimed: ClaimedDelivery) async {
        let started = clock.seconds
        var stored = claimed.delivery
        let answer = await send(stored, to: claimed.webhook)
        let step = stored.delivery.record(answer, at: clock.date)
        if case .retry(let seconds) = step {
            let due = clock.unixMillis + seconds * 1000
            retries.withLock { $0.add(due) }
        }
        let seconds = clock.seconds - started
        counters.count(step, seconds: seconds)
        let reason = step == .disableWebhook ? "the receiver answered 410 Gone" : nil
        do throws(StoreError) {
            try await store.recordAttempt(stored, disableReason: reason)
        } catch {
            // The lease runs out and the attempt is made again: at least once, as promised.
            logger.warning("webhook attempt not recorded: \(error)", metadata: ["delivery": "\(stored.delivery.id)"])
        }
        logger.info(
            "webhook attempt",
            metadata: [
                "webhook": "\(claimed.webhook.id)", "delivery": "\(stored.delivery.id)", "attempt": "\(stored.delivery.attempts)",
                "answer": "\(answer)", "state": "\(stored.delivery.state.rawValue)",
            ])
    }

    private func send(_ stored: StoredDelivery, to webhook: StoredWebhook) async -> DeliveryAnswer {
        let url: WebhookURL
        do throws(WebhookAddressError) { url = try WebhookURL(webhook.url) } catch { return .noAnswer(error.description) }
        guard let keyring = webhook.keyring() else { return .noAnswer("the webhook's stored secret does not read") }
        let destination: Destination
        do throws(WebhookAddressError) {
            destination = try await policy.destination(for: url, resolver: resolver)
        } catch {
            return .noAnswer(error.description)
        }
        let now = clock.date
        let signature = WebhookSignature(
            id: stored.delivery.id, timestamp: Int64(now.timeIntervalSince1970), body: stored.payload,
            secrets: keyring.signingSecrets(at: now))
        return await client.post(
            to: destination, headers: [("Content-Type", "application/json")] + signature.headers, body: stored.payload,
            timeoutSeconds: RetrySchedule.attemptDeadlineSeconds)
    }
}

/// `/metrics` counters of the worker: attempts by outcome and their total latency.
final class WebhookCounters: Sendable {
    let delivered = Atomic<Int>(0)
    let retrying = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    private let latencyMicros = Atomic<Int>(0)

    func count(_ step: DeliveryStep, seconds: Double) {
        switch step {
        case .delivered: delivered.add(1, ordering: .relaxed)
        case .retry: retrying.add(1, ordering: .relaxed)
        case .failed, .disableWebhook: failed.add(1, ordering: .relaxed)
        }
        latencyMicros.add(Int(seconds * 1_000_000), ordering: .relaxed)
    }

    /// The Prometheus text of the counters.
    var text: String {
        let attempts = delivered.load(ordering: .relaxed) + retrying.load(ordering: .relaxed) + failed.load(ordering: .relaxed)
        return """
            # HELP tabserver_webhook_attempts_total Webhook delivery attempts by outcome.
            # TYPE tabserver_webhook_attempts_total counter
            tabserver_webhook_attempts_total{outcome="delivered"} \(delivered.load(ordering: .relaxed))
            tabserver_webhook_attempts_total{outcome="retrying"} \(retrying.load(ordering: .relaxed))
            tabserver_webhook_attempts_total{outcome="failed"} \(failed.load(ordering: .relaxed))
            # HELP tabserver_webhook_attempt_seconds Time spent in webhook delivery attempts.
            # TYPE tabserver_webhook_attempt_seconds summary
            tabserver_webhook_attempt_seconds_sum \(Double(latencyMicros.load(ordering: .relaxed)) / 1_000_000)
            tabserver_webhook_attempt_seconds_count \(attempts)

            """
    }
}

/// When the retries a worker scheduled fall due, so that it sleeps until the next one rather than polling for it.
/// At most ``capacity`` are kept (the earliest): one beyond them is found by the worker's regular look at the outbox.
struct RetryTimes: Sendable {
    static let capacity = 1024
    /// Unix milliseconds, ascending.
    private(set) var due: [Int64] = []

    mutating func add(_ millis: Int64) {
        let index = due.firstIndex { $0 > millis } ?? due.endIndex
        guard index < Self.capacity else { return }
        due.insert(millis, at: index)
        if due.count > Self.capacity { due.removeLast() }
    }

    /// How long to sleep after a look at the outbox at `now` (Unix milliseconds): until the next retry not due then,
    /// at most `limit`; the retries due by `now` are forgotten (that look claimed them).
    mutating func sleep(atMillis now: Int64, atMost limit: Duration) -> Duration {
        due.removeAll { $0 <= now }
        guard let next = due.first else { return limit }
        return min(limit, .milliseconds(next - now))
    }
}
