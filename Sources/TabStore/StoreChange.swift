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
    /// An environment (`to`) was pointed at the version another one (`from`) points at (`POST …/promote`), by
    /// `author`: what `/v1/events` tells as `event: promote`. The pointer's own announcement may come too.
    case promoted(PromotionSubject, from: String, to: String, version: Int, author: String, committedAtMillis: Int64)
    /// An account's revoked versions changed (a revoke or an un-revoke): reload them.
    case revocations(account: String, committedAtMillis: Int64)
    /// An API token was made, revoked or rotated: authentication must see it within a second.
    case token(id: String, committedAtMillis: Int64)
    /// Something changed that was not announced one by one (the periodic check found it): reload everything.
    case everything
}

extension TabStore {
    /// Stores that only this process writes have nothing to report.
    public func watch(_ onChange: @escaping @Sendable (StoreChange) -> Void) {}
}

/// What a promotion moved: an account's layout or a strings table.
public enum PromotionSubject: Sendable, Equatable {
    case layout(account: String)
    case strings(locale: String)
}

extension RolloutRows {
    /// Stores that only this process writes have no one to tell.
    public func announcePromotion(
        _ subject: PromotionSubject, from: String, to: String, version: Int, author: String, atMillis: Int64
    ) throws(StoreError) {}
}
