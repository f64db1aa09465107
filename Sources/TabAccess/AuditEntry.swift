import Foundation

/// One line of the audit log: who (actor, token id, address) did what (method, path, action) to which account
/// and environment, with what outcome (status), when, in which request. `GET /v1/audit` (docs/security.md, "The audit log").
public struct AuditEntry: Sendable, Equatable, Codable {
    /// The store's sequence number: only grows, orders the log, and is what a cursor holds.
    public var id: Int64
    /// When it happened.
    public var at: Date
    /// The token's name, or `anonymous` for a request without a valid token.
    public var actor: String
    /// The token's id; nil for bootstrap tokens and refused requests without a known token.
    public var tokenID: TokenID?
    /// The client's address (through `--trusted-proxy`).
    public var address: String
    /// The HTTP method.
    public var method: String
    /// The request path, without the query.
    public var path: String
    /// What was done, e.g. `layout.write`, `token.create`, `refused`.
    public var action: String
    /// The account concerned, if any.
    public var account: String?
    /// The environment concerned, if any.
    public var environment: String?
    /// The version made, if any.
    public var version: Int?
    /// The answer's status.
    public var status: Int
    /// The request's id, to find it in the server's log.
    public var requestID: String?
    /// How many requests this entry stands for: refusals repeated by one address within a minute are coalesced.
    public var count: Int

    /// The actor of a request without a valid token.
    public static let anonymous = "anonymous"

    /// An entry; `id` is 0 until the store gives it one.
    public init(
        id: Int64 = 0, at: Date, actor: String, tokenID: TokenID?, address: String, method: String, path: String,
        action: String, account: String? = nil, environment: String? = nil, version: Int? = nil, status: Int,
        requestID: String? = nil, count: Int = 1
    ) {
        self.id = id
        self.at = at
        self.actor = actor
        self.tokenID = tokenID
        self.address = address
        self.method = method
        self.path = path
        self.action = action
        self.account = account
        self.environment = environment
        self.version = version
        self.status = status
        self.requestID = requestID
        self.count = count
    }

    /// The longest path a refusal's entry keeps, in UTF-8 bytes: anyone can send a refused request, and its path is
    /// theirs to make long.
    public static let maximumRefusedPathBytes = 256

    /// The entry for a refused request: `refused`, its status, the token's name and id when the token was known, and
    /// its path cut to ``maximumRefusedPathBytes`` (on a character boundary, `…` marking the cut).
    public static func refusal(
        _ refusal: AccessRefusal, grant: Grant?, at: Date, address: String, method: String, path: String,
        account: String? = nil, environment: String? = nil, requestID: String? = nil
    ) -> AuditEntry {
        AuditEntry(
            at: at, actor: grant?.name ?? anonymous, tokenID: grant?.tokenID, address: address, method: method,
            path: bounded(path, bytes: maximumRefusedPathBytes), action: "refused", account: account, environment: environment,
            status: refusal.status, requestID: requestID)
    }

    /// `text` when it fits in `bytes` UTF-8 bytes, else its longest prefix that fits with `…` after it.
    static func bounded(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var kept = ""
        var used = 0
        let budget = bytes - "…".utf8.count
        for character in text {
            let size = character.utf8.count
            guard used + size <= budget else { break }
            kept.append(character)
            used += size
        }
        return kept + "…"
    }

    /// The key under which repeated refusals are coalesced, within the minute they fall in. Refusals without a
    /// valid token (401, `anonymous`) share one key per status and minute whatever their address: a flood from
    /// 20,000 addresses is one entry (its address the first one's) with a `count`. Refusals of a valid token (403) are
    /// keyed by address, token, account and environment: one token's refusals are never counted under another's.
    public var coalescingKey: String? {
        guard action == "refused" else { return nil }
        let minute = Int64((at.timeIntervalSince1970 / 60).rounded(.down))
        if actor == Self.anonymous && tokenID == nil && status == 401 { return "anonymous \(status) \(minute)" }
        let token = tokenID?.rawValue ?? "name:" + actor
        return "\(address) \(status) \(minute) \(token) \(account ?? "-") \(environment ?? "-")"
    }

    enum CodingKeys: String, CodingKey {
        case id, at, actor, tokenID = "tokenId", address, method, path, action, account, environment, version, status
        case requestID = "requestId", count
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        let text = try container.decode(String.self, forKey: .at)
        guard let at = RFC3339.date(from: text) else {
            throw DecodingError.dataCorruptedError(forKey: .at, in: container, debugDescription: "'\(text)' is not RFC 3339")
        }
        self.at = at
        actor = try container.decode(String.self, forKey: .actor)
        tokenID = try container.decodeIfPresent(TokenID.self, forKey: .tokenID)
        address = try container.decode(String.self, forKey: .address)
        method = try container.decode(String.self, forKey: .method)
        path = try container.decode(String.self, forKey: .path)
        action = try container.decode(String.self, forKey: .action)
        account = try container.decodeIfPresent(String.self, forKey: .account)
        environment = try container.decodeIfPresent(String.self, forKey: .environment)
        version = try container.decodeIfPresent(Int.self, forKey: .version)
        status = try container.decode(Int.self, forKey: .status)
        requestID = try container.decodeIfPresent(String.self, forKey: .requestID)
        count = try container.decodeIfPresent(Int.self, forKey: .count) ?? 1
    }

    /// The fields of `GET /v1/audit`: `tokenId` null when there is none, `account`, `environment`, `version` and `requestId`
    /// only when there are, `at` in RFC 3339.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(RFC3339.string(from: at), forKey: .at)
        try container.encode(actor, forKey: .actor)
        try container.encode(tokenID, forKey: .tokenID)
        try container.encode(address, forKey: .address)
        try container.encode(method, forKey: .method)
        try container.encode(path, forKey: .path)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(account, forKey: .account)
        try container.encodeIfPresent(environment, forKey: .environment)
        try container.encodeIfPresent(version, forKey: .version)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(requestID, forKey: .requestID)
        try container.encode(count, forKey: .count)
    }
}

/// A page of the audit log as `GET /v1/audit` answers it: `{"entries": [...], "next": cursor or null}`.
public struct AuditPage: Sendable, Equatable, Encodable {
    /// The entries, oldest first.
    public let entries: [AuditEntry]
    /// Where the next page starts; nil on the last page.
    public let next: AuditCursor?

    /// A page of `entries` (oldest first, at most the query's limit, and one more if there is a next page, which is
    /// dropped here: fetching `limit + 1` rows is how a store knows whether another page exists).
    public init(fetched entries: [AuditEntry], limit: Int) {
        self.entries = Array(entries.prefix(limit))
        next = entries.count > limit ? self.entries.last.map { AuditCursor(after: $0.id) } : nil
    }

    /// A page that ends before it is full: the store rows examined for it ran out of budget at `next`.
    public init(entries: [AuditEntry], next: AuditCursor) {
        self.entries = entries
        self.next = next
    }

    enum CodingKeys: String, CodingKey { case entries, next }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entries, forKey: .entries)
        try container.encode(next, forKey: .next)
    }
}
