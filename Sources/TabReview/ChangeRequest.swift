import Foundation
import TabJSON

/// Where a change request stands (docs/change-requests.md).
public enum ChangeRequestState: String, Sendable, Codable, CaseIterable {
    case open, approved, applied, rejected, cancelled, failed

    /// Whether nothing more can happen to it.
    public var isFinal: Bool { [.applied, .rejected, .cancelled, .failed].contains(self) }
}

/// A change to a protected environment held for review: what it would do (its content kept as a draft version),
/// with the precondition it was sent with, and who approved it.
public struct ChangeRequest: Sendable, Codable, Equatable {
    public struct Approval: Sendable, Codable, Equatable {
        public var by: String
        public var atMillis: Int64
    }

    public var id: String
    public var state: ChangeRequestState
    public var author: String
    public var createdAtMillis: Int64
    public var environment: String
    public var account: String
    /// The name of the command it holds (``HeldCommand/action``): `layout.put`, `layout.delete`, `build.declare`, …
    /// (the audit action of the change). With `version`, `body`, `locale`, `contentType` and `build` it is the
    /// command's encoding (``HeldCommand/Fields``), as every release has stored it.
    public var action: String
    /// The draft that holds the content (nil for a delete).
    public var version: Int?
    /// The `If-Match` tags it was sent with (nil: `If-None-Match: *`, create only).
    public var ifMatch: [String]?
    public var approvals: [Approval] = []
    public var required: Int
    public var applyAtMillis: Int64?
    /// The body of the request that is run again when it is applied, for a change that is not a layout's content (a
    /// promotion, a rollout's plan or raise, a strings table, a build's declaration).
    public var body: String?
    /// The strings table a strings write changes (its `account` is empty then), and the body's media type.
    public var locale: String?
    public var contentType: String?
    /// The build a declaration or retirement changes, `{platform}/{appVersion}` (its `account` is empty then).
    public var build: String?
    public var reason: String?
    public var updatedAtMillis: Int64

    public init(
        id: String, author: String, createdAtMillis: Int64, environment: String, account: String, action: String, version: Int?,
        ifMatch: [String]?, required: Int, applyAtMillis: Int64?, body: String? = nil, locale: String? = nil, contentType: String? = nil,
        build: String? = nil
    ) {
        self.id = id
        self.state = .open
        self.author = author
        self.createdAtMillis = createdAtMillis
        self.environment = environment
        self.account = account
        self.action = action
        self.version = version
        self.ifMatch = ifMatch
        self.required = required
        self.applyAtMillis = applyAtMillis
        self.body = body
        self.locale = locale
        self.contentType = contentType
        self.build = build
        self.updatedAtMillis = createdAtMillis
    }

    /// A new request holding `command` against `account` in `environment`; `version` is the version it would serve
    /// (shown with a diff), a layout write's draft when the command has one.
    public init(
        id: String, author: String, createdAtMillis: Int64, environment: String, account: String, command: HeldCommand, version: Int?,
        ifMatch: [String]?, required: Int, applyAtMillis: Int64?
    ) {
        let fields = command.fields
        self.init(
            id: id, author: author, createdAtMillis: createdAtMillis, environment: environment, account: account, action: fields.action,
            version: command.draft ?? version, ifMatch: ifMatch, required: required, applyAtMillis: applyAtMillis, body: fields.body,
            locale: fields.locale, contentType: fields.contentType, build: fields.build)
    }

    /// The command it holds, read from its record's fields.
    /// - Throws: ``HeldCommandError`` for an action this build does not know or a field the command lacks.
    public var command: HeldCommand {
        get throws(HeldCommandError) {
            try HeldCommand(
                HeldCommand.Fields(action: action, version: version, body: body, locale: locale, contentType: contentType, build: build))
        }
    }

    /// A new id: `cr_` and 16 hex digits.
    public static func newID() -> String {
        "cr_" + (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// Approved by `by` at `millis`: approved once `required` distinct tokens have.
    /// - Throws: ``ReviewError/ownChange`` for its author, ``ReviewError/alreadyApproved`` for a second approval by
    ///   one name, ``ReviewError/notOpen(_:)`` once decided.
    public func approved(by: String, atMillis millis: Int64, applyAtMillis: Int64? = nil) throws(ReviewError) -> ChangeRequest {
        guard state == .open || state == .approved else { throw .notOpen(state) }
        guard by != author else { throw .ownChange }
        guard !approvals.contains(where: { $0.by == by }) else { throw .alreadyApproved(by) }
        // Once approved, its time is what the approvers agreed to: a later approval does not move it.
        if state == .approved, let applyAtMillis, applyAtMillis != self.applyAtMillis { throw .applyAtSettled }
        var next = self
        next.approvals.append(Approval(by: by, atMillis: millis))
        if next.approvals.count >= required { next.state = .approved }
        if let applyAtMillis { next.applyAtMillis = applyAtMillis }
        next.updatedAtMillis = millis
        return next
    }

    /// Rejected, with a reason. - Throws: ``ReviewError/notOpen(_:)`` once decided.
    public func rejected(reason: String?, atMillis millis: Int64) throws(ReviewError) -> ChangeRequest {
        try ended(.rejected, reason: reason, atMillis: millis)
    }

    /// Cancelled by its author or an admin. - Throws: ``ReviewError/notTheAuthor`` for anyone else.
    public func cancelled(by: String, isAdmin: Bool, atMillis millis: Int64) throws(ReviewError) -> ChangeRequest {
        guard by == author || isAdmin else { throw .notTheAuthor }
        return try ended(.cancelled, reason: nil, atMillis: millis)
    }

    /// Applied, or failed with why.
    public func finished(applied: Bool, reason: String?, atMillis millis: Int64) -> ChangeRequest {
        var next = self
        next.state = applied ? .applied : .failed
        next.reason = reason
        next.updatedAtMillis = millis
        return next
    }

    /// Whether it may be applied now by hand: approved, and its `applyAt`, if any, has come.
    /// - Throws: ``ReviewError/notApproved(_:)``, or ``ReviewError/notYet(_:)`` before its `applyAt`.
    public func checkApplicable(atMillis millis: Int64) throws(ReviewError) {
        guard state == .approved else { throw .notApproved(state) }
        if let at = applyAtMillis, at > millis { throw .notYet(at) }
    }

    /// Whether the store's clock should apply it now (approved, and its time has come).
    public func isDue(atMillis millis: Int64) -> Bool { state == .approved && (applyAtMillis.map { $0 <= millis } ?? false) }

    private func ended(_ state: ChangeRequestState, reason: String?, atMillis millis: Int64) throws(ReviewError) -> ChangeRequest {
        guard !self.state.isFinal else { throw .notOpen(self.state) }
        var next = self
        next.state = state
        next.reason = reason
        next.updatedAtMillis = millis
        return next
    }

    /// The record the store keeps (``JSONEncoder/sorted``: a `/` is written as it is; records stored before with `\/`
    /// read the same).
    public var json: [UInt8] {
        // Strings, integers and arrays of them: encoding cannot fail.
        return Array(try! JSONEncoder.sorted.encode(self))
    }

    /// A record the store kept; nil when it does not read.
    public init?(json: [UInt8]) {
        guard let decoded = try? JSONDecoder().decode(ChangeRequest.self, from: Data(json)) else { return nil }
        self = decoded
    }
}

/// Why a review step is refused.
public enum ReviewError: Error, Sendable, Equatable, CustomStringConvertible {
    case ownChange
    case alreadyApproved(String)
    case notOpen(ChangeRequestState)
    case notTheAuthor
    case notApproved(ChangeRequestState)
    /// An approved request's `applyAt` cannot be moved by a later approval.
    case applyAtSettled
    /// An explicit apply before the request's `applyAt` (Unix milliseconds).
    case notYet(Int64)

    /// The HTTP status the contract gives it.
    public var status: Int {
        switch self {
        case .ownChange, .notTheAuthor: 403
        case .alreadyApproved, .notOpen, .notApproved, .applyAtSettled, .notYet: 409
        }
    }

    public var description: String {
        switch self {
        case .ownChange: "the author of a change request cannot approve it"
        case .alreadyApproved(let name): "'\(name)' approved this change request already"
        case .notOpen(let state): "the change request is \(state.rawValue)"
        case .notTheAuthor: "only its author or an admin may cancel a change request"
        case .notApproved(let state): "the change request is \(state.rawValue), not approved"
        case .applyAtSettled: "the change request is approved: its applyAt is settled"
        case .notYet(let millis):
            "the change request applies at \(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(millis) / 1000))), not before"
        }
    }
}

/// `--require-approval ENV[:N]`: the environments whose changes wait for `N` (default 1) approvals.
public struct ApprovalPolicy: Sendable, Equatable {
    public private(set) var required: [String: Int] = [:]

    public init() {}

    /// Reads `production`, `production:2`.
    /// - Throws: a message naming the bad item.
    public mutating func add(_ item: String) throws(ReviewError.Parse) {
        let parts = item.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...2).contains(parts.count), !parts[0].isEmpty else { throw ReviewError.Parse(item: item) }
        let count = parts.count == 2 ? Int(parts[1]) : 1
        guard let count, (1...10).contains(count) else { throw ReviewError.Parse(item: item) }
        required[parts[0]] = count
    }

    /// The approvals a change to `environment` needs; nil when it is not protected.
    public func approvals(for environment: String) -> Int? { required[environment] }
}

extension ReviewError {
    /// A `--require-approval` value that is not `ENV` or `ENV:N` (N from 1 to 10).
    public struct Parse: Error, Sendable, CustomStringConvertible {
        public let item: String
        public var description: String { "--require-approval takes ENV or ENV:N (N from 1 to 10), not '\(item)'" }
    }
}
