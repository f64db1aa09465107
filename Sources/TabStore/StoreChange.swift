/// A change another process committed, reported by stores that several replicas share.
public enum StoreChange: Sendable, Equatable {
    /// An account's layout has a new version (or a deletion record); `committedAtMillis` dates the commit.
    case layout(account: String, committedAtMillis: Int64)
    /// A rollout of an account was started or changed (a step, a pause, a completion, a rollback), as an older
    /// release announces it (which rollout and revision unsaid).
    case rollout(account: String, committedAtMillis: Int64)
    /// One change of a rollout was recorded: the lines of its history at `revision` are that change.
    case rolloutRecorded(account: String, environment: String, rollout: Int, revision: Int, committedAtMillis: Int64)
    /// A strings table has a new version.
    case strings(locale: String, committedAtMillis: Int64)
    /// An API token was made, revoked or rotated: authentication must see it within a second.
    case token(id: String, committedAtMillis: Int64)
    /// Something changed that was not announced one by one (the periodic check found it): reload everything.
    case everything
}

extension TabStore {
    /// Stores that only this process writes have nothing to report.
    public func watch(_ onChange: @escaping @Sendable (StoreChange) -> Void) {}
}
