import Synchronization

/// A continuation resumed by whichever of several racers comes first (a call and its deadline); later
/// resumptions do nothing. The one race-to-resume helper of the service.
public final class OneOutcome<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, Never>?>(nil)

    public init() {}

    /// Hands over the continuation to resume; call it first, inside `withCheckedContinuation`.
    public func set(_ continuation: CheckedContinuation<T, Never>) { self.continuation.withLock { $0 = continuation } }

    /// Resumes with `value` if no racer did before.
    public func resume(returning value: T) { continuation.withLock { $0.take() }?.resume(returning: value) }
}
