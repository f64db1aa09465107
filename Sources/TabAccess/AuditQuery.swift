import TabJSON

/// An opaque place in the audit log: `a1.` and the URL-safe base64 of the last id seen. Opaque so clients do not
/// build them, URL-safe so they go in `?after=` as they are, versioned (`a1`) so the form can change.
public struct AuditCursor: Sendable, Equatable, Hashable, TextCodable {
    /// Entries after this id come next.
    public let afterID: Int64

    /// The cursor after the entry `id`.
    public init(after id: Int64) { afterID = id }

    /// The cursor `text`, or nil when it is not one this server made.
    public init?(_ text: some StringProtocol) {
        guard text.hasPrefix("a1."), let bytes = Base64.decodeURLSafe(text.dropFirst(3)), bytes.count == 8 else { return nil }
        let id = bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard id >= 0 else { return nil }
        afterID = id
    }

    /// The cursor's text.
    public var description: String {
        "a1." + Base64.encodeURLSafe((0..<8).map { UInt8(truncatingIfNeeded: afterID >> Int64(56 - 8 * $0)) })
    }

    public static let textKind = "a cursor"
}

/// `GET /v1/audit?after=&limit=&account=&actor=` as a value: the page wanted and the filters, each applied by
/// the store in SQL and, as the definition of what they mean, by `matches(_:)`.
public struct AuditQuery: Sendable, Equatable {
    /// The page size when none is asked for.
    public static let defaultLimit = 100
    /// The largest page.
    public static let maximumLimit = 1000
    /// The most rows one request reads to fill a page of entries its token may read; past it the page ends short,
    /// with a `next` after the last row read.
    public static let maximumExamined = 5000

    /// Entries after this cursor; nil from the start.
    public var after: AuditCursor?
    /// At most this many entries.
    public var limit: Int
    /// Only entries about this account.
    public var account: String?
    /// Only entries by this actor (token name).
    public var actor: String?

    /// A query.
    public init(after: AuditCursor? = nil, limit: Int = AuditQuery.defaultLimit, account: String? = nil, actor: String? = nil) {
        self.after = after
        self.limit = limit
        self.account = account
        self.actor = actor
    }

    /// Whether `entry` belongs in the answer to this query (cursor and filters; not the page size).
    public func matches(_ entry: AuditEntry) -> Bool {
        entry.id > (after?.afterID ?? 0) && (account == nil || entry.account == account) && (actor == nil || entry.actor == actor)
    }
}

extension Grant {
    /// Whether the audit entry may be shown to this grant: `read` over its account and environment (entries about
    /// no account need accounts `*`).
    public func mayRead(_ entry: AuditEntry) -> Bool { mayRead(account: entry.account, environment: entry.environment) }
}
