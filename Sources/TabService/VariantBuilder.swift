import Dispatch
import Synchronization

/// Compiles and compresses representations off libmicrohttpd's threads: one at a time on a queue of its own (so
/// that a flood of new variants takes at most one core, and `/healthz` and cached reads keep every worker), with
/// at most ``perLayout`` builds waiting per layout (503 beyond), so that one layout's variants cannot take every
/// turn.
final class VariantBuilder: Sendable {
    private let queue = DispatchQueue(label: "tabserver.variants", qos: .userInitiated)
    private let waiting = Mutex<[String: Int]>([:])
    /// Builds one layout may have queued or running at once.
    let perLayout: Int

    init(perLayout: Int = 4) { self.perLayout = perLayout }

    /// Runs `work` on the builder's queue, or returns nil at once when `layout` already has ``perLayout`` builds.
    func build<T: Sendable>(layout: String, _ work: @escaping @Sendable () -> T) async -> T? {
        let admitted = waiting.withLock { waiting -> Bool in
            let mine = waiting[layout, default: 0]
            guard mine < perLayout else { return false }
            waiting[layout] = mine + 1
            return true
        }
        guard admitted else { return nil }
        defer {
            waiting.withLock { waiting in
                let mine = waiting[layout, default: 1] - 1
                waiting[layout] = mine > 0 ? mine : nil
            }
        }
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}
