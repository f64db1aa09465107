/// Every change that can be held for review (docs/change-requests.md), as a value: what a change request keeps and
/// what its apply runs. A change request's account, environment, precondition and author are the request's own;
/// the command is what to do there.
///
/// Its encoding is the fields a change request's record has always had (`action` naming the command, and `version`,
/// `body`, `locale`, `contentType`, `build` as it needs them), so a record written by an older release reads as a
/// command and a record this one writes is one an older release replays the same way, or, for a command it does not
/// know, fails by its `action`. A new command therefore takes an action no release used before.
public enum HeldCommand: Sendable, Equatable, Codable {
    /// A layout's new content, kept as the draft version `draft` (`PUT` or `PATCH` on the layout).
    case layoutWrite(LayoutMethod, draft: Int)
    /// A restore of an old version, its content kept as the draft version `draft`.
    case layoutRestore(draft: Int)
    /// The layout deleted (the account falls back to `default`).
    case layoutDelete
    /// A promotion between environments (its request body, `{"from", "to", "rollout"?}`).
    case promotion(body: String)
    /// A rollout started (its plan, the request body).
    case rolloutStart(body: String)
    /// A running rollout raised (`rollout.patch` with a percent, its patch the body) or completed.
    case rolloutChange(RolloutStep, body: String)
    /// A global strings table written (its content and media type).
    case stringsWrite(locale: String, contentType: String, body: String)
    /// A strings table promoted between environments (the request body).
    case stringsPromotion(locale: String, body: String)
    /// A build declared, `{platform}/{appVersion}`, with its declaration (the request body).
    case buildDeclare(build: String, body: String)
    /// A build retired, `{platform}/{appVersion}`.
    case buildRetire(build: String)

    /// The method of a held layout write.
    public enum LayoutMethod: String, Sendable, CaseIterable {
        case put, patch
    }

    /// The step of a held rollout change.
    public enum RolloutStep: String, Sendable, CaseIterable {
        /// `PATCH …/layout/rollout` that moves the percent.
        case raise = "patch"
        /// `POST …/layout/rollout/complete`.
        case complete
    }

    /// The name the record and the API give it (also the audit action of the change it holds).
    public var action: String { fields.action }

    /// The draft version a layout write applies; nil for the other commands.
    public var draft: Int? {
        switch self {
        case .layoutWrite(_, let draft), .layoutRestore(let draft): draft
        default: nil
        }
    }

    /// Whether it changes a layout's pointer directly (a write, a restore, a delete): held without `If-Match`, it
    /// was sent with `If-None-Match: *`.
    public var isLayoutChange: Bool {
        switch self {
        case .layoutWrite, .layoutRestore, .layoutDelete: true
        default: false
        }
    }

    /// The command as a change request's record keeps it.
    public var fields: Fields {
        switch self {
        case .layoutWrite(let method, let draft): Fields(action: "layout.\(method.rawValue)", version: draft)
        case .layoutRestore(let draft): Fields(action: "layout.restore", version: draft)
        case .layoutDelete: Fields(action: "layout.delete")
        case .promotion(let body): Fields(action: "layout.promote", body: body)
        case .rolloutStart(let body): Fields(action: "rollout.start", body: body)
        case .rolloutChange(let step, let body): Fields(action: "rollout.\(step.rawValue)", body: body)
        case .stringsWrite(let locale, let contentType, let body):
            Fields(action: "strings.put", body: body, locale: locale, contentType: contentType)
        case .stringsPromotion(let locale, let body):
            Fields(action: "strings.promote", body: body, locale: locale, contentType: "application/json")
        case .buildDeclare(let build, let body): Fields(action: "build.declare", body: body, build: build)
        case .buildRetire(let build): Fields(action: "build.retire", build: build)
        }
    }

    /// The command a record's fields name.
    /// - Throws: ``HeldCommandError/unknown(_:)`` for an action this build does not know (never guessed), and
    ///   ``HeldCommandError/missing(action:field:)`` when a field the command needs is absent. A missing `body` reads as
    ///   empty, as releases before this one replayed it.
    public init(_ fields: Fields) throws(HeldCommandError) {
        let body = fields.body ?? ""
        func required<Value>(_ value: Value?, _ field: String) throws(HeldCommandError) -> Value {
            guard let value else { throw .missing(action: fields.action, field: field) }
            return value
        }
        switch fields.action {
        case "layout.put": self = .layoutWrite(.put, draft: try required(fields.version, "version"))
        case "layout.patch": self = .layoutWrite(.patch, draft: try required(fields.version, "version"))
        case "layout.restore": self = .layoutRestore(draft: try required(fields.version, "version"))
        case "layout.delete": self = .layoutDelete
        case "layout.promote": self = .promotion(body: body)
        case "rollout.start": self = .rolloutStart(body: body)
        case "rollout.patch": self = .rolloutChange(.raise, body: body)
        case "rollout.complete": self = .rolloutChange(.complete, body: body)
        case "strings.put":
            self = .stringsWrite(
                locale: try required(fields.locale, "locale"), contentType: fields.contentType ?? "text/plain", body: body)
        case "strings.promote": self = .stringsPromotion(locale: try required(fields.locale, "locale"), body: body)
        case "build.declare": self = .buildDeclare(build: try required(fields.build, "build"), body: body)
        case "build.retire": self = .buildRetire(build: try required(fields.build, "build"))
        default: throw .unknown(fields.action)
        }
    }

    public init(from decoder: any Decoder) throws {
        self = try HeldCommand(Fields(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
}

extension HeldCommand {
    /// The fields of a change request's record that hold its command (each left out when the command has none).
    public struct Fields: Sendable, Equatable, Codable {
        public var action: String
        public var version: Int?
        public var body: String?
        public var locale: String?
        public var contentType: String?
        public var build: String?

        public init(
            action: String, version: Int? = nil, body: String? = nil, locale: String? = nil, contentType: String? = nil,
            build: String? = nil
        ) {
            self.action = action
            self.version = version
            self.body = body
            self.locale = locale
            self.contentType = contentType
            self.build = build
        }
    }
}

/// Why a stored command is not run.
public enum HeldCommandError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An action this build does not know (held by a newer one, or written by hand).
    case unknown(String)
    /// A command whose record lacks a field it needs.
    case missing(action: String, field: String)

    public var description: String {
        switch self {
        case .unknown(let action):
            "this tabserver does not know the change \"\(action.prefix(64))\"; apply it from a newer one"
        case .missing(let action, let field):
            "the held change \"\(action.prefix(64))\" has no \(field)"
        }
    }
}
