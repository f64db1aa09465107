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
    /// An environment was pointed at another environment's version (`POST …/promote`): what `/v1/events` tells as
    /// `event: promote`. The pointer's own announcement (`layout` or `strings`) may come too.
    case promoted(PromotionNotice)
    /// An API token was made, revoked or rotated: authentication must see it within a second.
    case token(id: String, committedAtMillis: Int64)
    /// Something changed that was not announced one by one (the periodic check found it): reload everything.
    case everything
}

extension TabStore {
    /// Stores that only this process writes have nothing to report.
    public func watch(_ onChange: @escaping @Sendable (StoreChange) -> Void) {}
}

/// A promotion as the store announces it to the other replicas.
public struct PromotionNotice: Sendable, Equatable {
    public enum Subject: Sendable, Equatable {
        case layout(account: String)
        case strings(locale: String)
    }

    public var subject: Subject
    public var from: String
    public var to: String
    /// The version `to` points at now.
    public var version: Int
    /// Who promoted (the token's name).
    public var author: String
    public var committedAtMillis: Int64

    public init(subject: Subject, from: String, to: String, version: Int, author: String, committedAtMillis: Int64) {
        self.subject = subject
        self.from = from
        self.to = to
        self.version = version
        self.author = author
        self.committedAtMillis = committedAtMillis
    }
}

extension DeliveryRows {
    /// Stores that only this process writes have no one to tell.
    public func announce(_ promotion: PromotionNotice) throws(StoreError) {}
}
