import Foundation

@testable import TabClient

/// A device clock that only the test moves (``set(_:)``): what the schedule's tests and scenarios run on, so that a step
/// an hour away is reached at once, and never by a real wait.
final class ManualClock: DeviceClock {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [UUID: Sleeper] = [:]
    }

    private let state: Locked<State>

    init(_ now: Date) { state = Locked(State(now: now)) }

    /// A clock at an RFC 3339 time.
    convenience init(_ text: String) throws {
        guard let date = RFC3339.date(text) else { throw TestFailure("not an RFC 3339 time: \(text)") }
        self.init(date)
    }

    var now: Date { state.withLock { $0.now } }

    /// How many tasks are waiting for a time to come.
    var sleeping: Int { state.withLock { $0.sleepers.count } }

    /// Moves the clock to `date` (forward or back) and wakes the sleepers whose time has come.
    func set(_ date: Date) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = date
            let due = state.sleepers.filter { $0.value.deadline <= date }
            for key in due.keys { state.sleepers[key] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    func sleep(until deadline: Date) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Now { case wait, resume, cancel }
                let now = state.withLock { state -> Now in
                    if Task.isCancelled { return .cancel }
                    if state.now >= deadline { return .resume }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .wait
                }
                switch now {
                case .wait: break
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }
}
