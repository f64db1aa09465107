import Logging
import TabWebhooks

/// Sends `PURGE` with the stale keys (``CacheKeys/purged(by:)``) to every `--purge-url` after a publication, so that
/// a cache in front drops a change's answers at once instead of keeping them for their `max-age` (a rollback must
/// not wait that long).
///
/// Purges run off the request path: the publisher hands them over after the change is stored and published, and
/// the write's answer never waits for them. Each request has a deadline (``deadlineMillis``); a failure is logged
/// and counted (`tabserver_cache_purges_total{result="failed"}`), never retried: the answer expires by its `max-age`
/// anyway. Purge targets are the operator's own caches, often on loopback: the webhooks' address rules do not apply.
final class CachePurger: Sendable {
    /// Sends one purge: the target's URL and the header fields; the answer's status or why none came.
    typealias Send = @Sendable (_ url: String, _ headers: [(name: String, value: String)]) async -> DeliveryAnswer

    /// The longest one purge request may take.
    static let deadlineMillis: Int64 = 2000
    /// The most keys one request names (a change to a layout many others extend affects them all).
    static let keysPerRequest = 64

    let targets: [String]
    private let send: Send
    private let metrics: Metrics
    private let logger: Logger

    /// - Parameters:
    ///   - targets: the `--purge-url`s (http or https).
    ///   - send: how a purge is sent (libcurl by default; a test's recorder).
    init(targets: [String], metrics: Metrics, logger: Logger, send: Send? = nil) {
        self.targets = targets
        self.metrics = metrics
        self.logger = logger
        self.send =
            send ?? { url, headers in
                await WebhookHTTPClient().send(method: "PURGE", url: url, headers: headers, timeoutMillis: CachePurger.deadlineMillis)
            }
    }

    /// Purges what `events` made stale at every target, in the background.
    func purge(after events: [ChangeEvent]) {
        guard !targets.isEmpty else { return }
        let keys = CacheKeys.purged(by: events)
        guard !keys.isEmpty else { return }
        Task.detached { await self.purge(keys) }
    }

    /// Purges `keys` at every target at once, ``keysPerRequest`` keys per request; returns when every request was
    /// answered or passed its deadline.
    func purge(_ keys: [String]) async {
        let batches = stride(from: 0, to: keys.count, by: Self.keysPerRequest).map {
            keys[$0..<min($0 + Self.keysPerRequest, keys.count)].joined(separator: " ")
        }
        await withTaskGroup(of: Void.self) { group in
            for target in targets {
                for batch in batches {
                    group.addTask {
                        let answer = await self.send(target, [("Surrogate-Key", batch), ("xkey", batch)])
                        switch answer {
                        case .status(let status) where (200..<300).contains(status):
                            self.metrics.purgesSent.add()
                        case .status(let status):
                            self.metrics.purgesFailed.add()
                            self.logger.warning(
                                "cache purge refused", metadata: ["url": "\(target)", "status": "\(status)", "keys": "\(batch)"])
                        case .noAnswer(let reason):
                            self.metrics.purgesFailed.add()
                            self.logger.warning(
                                "cache purge failed", metadata: ["url": "\(target)", "reason": "\(reason)", "keys": "\(batch)"])
                        }
                    }
                }
            }
        }
    }
}
