import Foundation
import TabAccess
import TabJSON

/// One change as a webhook receives it: `{"type", "timestamp", "data"}`, where `data` is the event's data exactly
/// as `/v1/events` sends it (one source for both), `type` is `layout.published`, `strings.published`,
/// `rollout.<state>`, `promote`, `change-request.<state>` or `layout.revoked` / `layout.unrevoked` (kind `revoke`), and
/// `timestamp` is RFC 3339.
public struct WebhookEvent: Sendable, Equatable {
    /// The kinds a webhook subscribes to (its `events`), the names `/v1/events` gives them.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case layout, strings, rollout, promote
        case changeRequest = "change-request"
        /// A version revoked or un-revoked (`layout.revoked`, `layout.unrevoked`).
        case revoke
    }

    /// The kind.
    public let kind: Kind
    /// The account it is about; nil for a strings table.
    public let account: String?
    /// The payload's `type`.
    public let type: String
    /// When it happened.
    public let timestamp: Date
    /// The event's `data` object, as JSON.
    public let data: [UInt8]

    /// Why an event cannot be made.
    public enum Invalid: Error, Sendable, Equatable {
        /// `data` is not a JSON object.
        case dataIsNotAJSONObject
        /// A rollout's or change request's state is not a word (`running`, `rolledBack`, `approved`, …).
        case invalidRolloutState(String)
    }

    /// The event of `kind` about `account` at `timestamp`; `rolloutState` names a rollout's (or a change
    /// request's) state.
    /// - Throws: `Invalid` when `data` is not a JSON object or a rollout or change-request event has no state of
    ///   letters.
    public init(kind: Kind, account: String?, rolloutState: String? = nil, timestamp: Date, data: [UInt8]) throws(Invalid) {
        guard (try? JSONSerialization.jsonObject(with: Data(data))) is [String: Any] else { throw .dataIsNotAJSONObject }
        switch kind {
        case .layout: type = "layout.published"
        case .strings: type = "strings.published"
        case .promote: type = "promote"
        case .rollout, .changeRequest:
            guard let state = rolloutState, !state.isEmpty, state.allSatisfy({ $0.isASCII && $0.isLetter }) else {
                throw .invalidRolloutState(rolloutState ?? "")
            }
            type = kind.rawValue + "." + state
        case .revoke:
            guard let state = rolloutState, state == "revoked" || state == "unrevoked" else {
                throw .invalidRolloutState(rolloutState ?? "")
            }
            type = "layout." + state
        }
        self.kind = kind
        self.account = account
        self.timestamp = timestamp
        self.data = data
    }

    /// The request body: these bytes are signed and sent, and kept in the outbox so every attempt sends the same.
    public var body: [UInt8] {
        // `type` is ASCII letters and dots and the timestamp digits and punctuation: neither needs escaping.
        Array(#"{"type":"\#(type)","timestamp":"\#(RFC3339.string(from: timestamp))","data":"#.utf8) + data + [UInt8(ascii: "}")]
    }
}

/// What a webhook wants: its `events` and, optionally, its `accounts` (globs). Events about no account (strings
/// tables) go to webhooks whose accounts are all (`*` or not given).
public struct WebhookSubscription: Sendable, Equatable {
    /// The kinds wanted.
    public let events: Set<WebhookEvent.Kind>
    /// The accounts wanted.
    public let accounts: [AccountGlob]

    /// A subscription; `accounts` defaults to every account.
    public init(events: Set<WebhookEvent.Kind>, accounts: [AccountGlob] = [.all]) {
        self.events = events
        self.accounts = accounts
    }

    /// Whether `event` is delivered to this webhook.
    public func wants(_ event: WebhookEvent) -> Bool {
        guard events.contains(event.kind) else { return false }
        guard let account = event.account else { return accounts.contains { $0.isAll } }
        return accounts.contains { $0.matches(account) }
    }
}

/// A validated `POST /v1/webhooks` body: `{"url", "events", "accounts"?}`. The URL's addresses are checked
/// separately (`AddressPolicy.destination`), since that resolves names.
public struct WebhookSpec: Sendable, Equatable {
    /// The URL.
    public let url: WebhookURL
    /// What it subscribes to.
    public let subscription: WebhookSubscription

    /// Reads and checks `body`.
    /// - Throws: `InvalidFields`, each problem with its pointer: not an object, `url` missing or not a webhook
    ///   URL, `events` missing, empty or unknown, a bad account glob, an unknown field.
    public init(json body: [UInt8]) throws(InvalidFields) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw InvalidFields(errors: [FieldError(pointer: "", message: "the body must be a JSON object")])
        }
        var errors: [FieldError] = []
        for key in object.keys.sorted() where !["url", "events", "accounts"].contains(key) {
            errors.append(FieldError(pointer: "/" + FieldError.escape(key), message: "unknown field"))
        }
        var url: WebhookURL?
        if let text = object["url"] as? String {
            do throws(WebhookAddressError) {
                url = try WebhookURL(text)
            } catch {
                errors.append(FieldError(pointer: "/url", message: error.description))
            }
        } else {
            errors.append(FieldError(pointer: "/url", message: "url must be an http or https URL"))
        }
        var events = Set<WebhookEvent.Kind>()
        if let list = object["events"] as? [Any], !list.isEmpty {
            for (index, item) in list.enumerated() {
                if let text = item as? String, let kind = WebhookEvent.Kind(rawValue: text) {
                    events.insert(kind)
                } else {
                    errors.append(
                        FieldError(pointer: "/events/\(index)", message: "'\(item)' is not an event (layout, strings, rollout, promote)"))
                }
            }
        } else {
            errors.append(FieldError(pointer: "/events", message: "events must be a non-empty array of layout, strings, rollout, promote"))
        }
        var accounts: [AccountGlob] = [.all]
        if let value = object["accounts"] { accounts = AccountGlob.list(from: value, errors: &errors) }
        guard errors.isEmpty, let url else { throw InvalidFields(errors: errors) }
        self.url = url
        subscription = WebhookSubscription(events: events, accounts: accounts)
    }
}
