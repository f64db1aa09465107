import Foundation
import Logging
import Synchronization
import TabStore
import TabWebhooks

/// Sends the outbox: every `pollInterval` (and at once when poked after a write) it claims due deliveries from the
/// store (leased, so each attempt is made by one worker across replicas), checks the URL's addresses again,
/// signs with the webhook's current secrets, POSTs through ``WebhookHTTPClient`` with the 10 s deadline, and
/// records the outcome with the retry schedule; a `410 Gone` disables the webhook. It runs on its own task and
/// Dispatch workers: request threads and the publisher never wait for it.
final class WebhookWorker: Sendable {
    let store: any TabStore
    let policy: AddressPolicy
    let resolver: any HostResolver
    let client = WebhookHTTPClient()
    let logger: Logger
    let counters = WebhookCounters()
    /// How long a claimed delivery is held before another worker may take it: past the attempt's deadline.
    static let leaseMillis: Int64 = 60_000
    /// Deliveries attempted at once.
    static let batch = 8
    let pollInterval: Duration

    private let task = Mutex<Task<Void, Never>?>(nil)
    private let poked = Atomic<Bool>(false)

    init(store: any TabStore, policy: AddressPolicy, resolver: any HostResolver, logger: Logger, pollInterval: Duration = .seconds(1)) {
        self.store = store
        self.policy = policy
        self.resolver = resolver
        self.logger = logger
        self.pollInterval = pollInterval
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
    }

    /// Stops the loop without waiting (attempts in flight finish and are recorded on their own).
    func cancel() { task.withLock { $0 }?.cancel() }

    /// Asks for a look at the outbox now (a write just committed deliveries).
    func poke() { poked.store(true, ordering: .relaxed) }

    private func run() async {
        while !Task.isCancelled {
            let attempted = await sendDue()
            if attempted > 0 { continue }
            let slices = max(1, Int(pollInterval / .milliseconds(50)))
            for _ in 0..<slices where !Task.isCancelled && !poked.exchange(false, ordering: .relaxed) {
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Claims and attempts one batch of due deliveries; returns how many were attempted.
    @discardableResult
    func sendDue(now: Date = Date()) async -> Int {
        let claimed: [ClaimedDelivery]
        do throws(StoreError) {
            claimed = try await store.claimDueDeliveries(atMillis: now.millis, leaseMillis: Self.leaseMillis, limit: Self.batch)
        } catch {
            logger.debug("webhook outbox not read: \(error)")
            return 0
        }
        await withTaskGroup(of: Void.self) { group in
            for delivery in claimed { group.addTask { await self.attempt(delivery) } }
        }
        return claimed.count
    }

    /// One attempt of one delivery, recorded.
    func attempt(_ claimed: ClaimedDelivery) async {
        let started = ContinuousClock.now
        var stored = claimed.delivery
        let answer = await send(stored, to: claimed.webhook)
        let step = stored.delivery.record(answer, at: Date())
        let seconds = (ContinuousClock.now - started) / .seconds(1)
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
        let now = Date()
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
