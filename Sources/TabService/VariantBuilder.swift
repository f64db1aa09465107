import Dispatch
import Synchronization

/// Compiles and compresses representations off libmicrohttpd's threads: one at a time on a queue of its own (so
/// that a flood of new variants takes at most one core, and `/healthz` and cached reads keep every worker), with
/// at most ``perLayout`` distinct builds waiting per layout (503 beyond), so that one layout's variants cannot take
/// every turn. Requests for a variant already being built share that build: they wait for it to end, then take
/// their turn on the queue without a slot of their own (their answer is then a cache hit), so a herd of first
/// requests for one layout (a cold start behind a load balancer) is answered, not refused.
final class VariantBuilder: Sendable {
    /// What a build makes, so that requests for the same thing share one build.
    struct Job: Hashable, Sendable {
        /// The layout's entry it is built from (a new snapshot's entry is another job).
        let entry: ObjectIdentifier
        let variant: VariantKey
    }

    private enum Admission { case refused, admitted, joined }

    private struct State {
        /// Distinct builds queued or running, by layout.
        var waiting: [String: Int] = [:]
        /// The jobs under way, with the requests waiting for each to end.
        var underWay: [Job: [CheckedContinuation<Admission, Never>]] = [:]
    }

    private let queue = DispatchQueue(label: "tabserver.variants", qos: .userInitiated)
    private let state = Mutex(State())
    /// Distinct builds one layout may have queued or running at once.
    let perLayout: Int

    init(perLayout: Int = 4) { self.perLayout = perLayout }

    /// Runs `work` on the builder's queue, or returns nil at once when `layout` already has ``perLayout`` builds.
    /// With a `job` that is under way already, waits for it to end, then runs `work` (which finds what that build
    /// made) on the queue without taking a slot.
    func build<T: Sendable>(layout: String, job: Job? = nil, _ work: @escaping @Sendable () -> T) async -> T? {
        let admission = await withCheckedContinuation { (continuation: CheckedContinuation<Admission, Never>) in
            let decided = state.withLock { state -> Admission? in
                if let job, state.underWay[job] != nil {
                    state.underWay[job]?.append(continuation)
                    return nil
                }
                let mine = state.waiting[layout, default: 0]
                guard mine < perLayout else { return .refused }
                state.waiting[layout] = mine + 1
                if let job { state.underWay[job] = [] }
                return .admitted
            }
            if let decided { continuation.resume(returning: decided) }
        }
        switch admission {
        case .refused: return nil
        case .joined: return await run(work)
        case .admitted:
            let result = await run(work)
            let joined = state.withLock { state -> [CheckedContinuation<Admission, Never>] in
                let mine = state.waiting[layout, default: 1] - 1
                state.waiting[layout] = mine > 0 ? mine : nil
                return job.flatMap { state.underWay.removeValue(forKey: $0) } ?? []
            }
            for request in joined { request.resume(returning: .joined) }
            return result
        }
    }

    private func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}
