/// One line of a rollout's history: a recorded transition, who made it, and the revision it was recorded at.
///
/// The history is kept in the rollout's record, so that every replica reads the same lines: `GET …/rollout`
/// shows them, and a replica that learns of another's change from the store gives `/v1/events` the events of
/// exactly that revision.
public struct RolloutHistoryEntry: Sendable, Hashable {
    public var transition: RolloutTransition
    /// The token's name, or the service's name for the clock's changes.
    public var author: String
    /// The rollout's ``Rollout/revision`` once the change that made this line was recorded.
    public var revision: Int
}

extension Rollout {
    /// The most lines a rollout's history keeps (the oldest go first): a rollout records a few changes per step,
    /// and an operator who pauses and resumes without end does not grow its record without end.
    public static let historyLimit = 200

    /// The lines recorded at `revision` (one change: a PATCH can record a resume, a raise and a pause at once).
    public func history(at revision: Int) -> [RolloutHistoryEntry] { history.filter { $0.revision == revision } }
}

extension RolloutChange {
    /// The change with its transitions appended to the rollout's history as `author`'s, at the revision the change
    /// records. The store calls it once per change it writes.
    public func recorded(by author: String) -> RolloutChange {
        guard !transitions.isEmpty else { return self }
        var change = self
        change.rollout.history += transitions.map { RolloutHistoryEntry(transition: $0, author: author, revision: rollout.revision) }
        if change.rollout.history.count > Rollout.historyLimit {
            change.rollout.history.removeFirst(change.rollout.history.count - Rollout.historyLimit)
        }
        return change
    }
}
