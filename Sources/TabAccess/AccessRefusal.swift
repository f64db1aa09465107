/// Why a management request is refused, with its status and its RFC 6750 §3 `WWW-Authenticate` challenge.
///
/// - No credentials: 401 and a bare challenge (§3.1: no error code when the request has no authentication).
/// - `invalid_token` (unknown, malformed, wrong secret, expired, revoked, retired by rotation): 401. Unknown and
///   wrong secret are told apart only to the audit log, never to the client, so ids cannot be probed.
/// - `insufficient_scope` (a valid token without the scope, account or environment): 403, naming the scope.
public enum AccessRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `realm` of every challenge.
    public static let realm = "tabserver"

    /// Why a token is not valid.
    public enum InvalidToken: String, Sendable, Equatable {
        /// The `Bearer` value is not a token of this server's form, nor a bootstrap token.
        case malformed
        /// No token has the id the value names.
        case unknown
        /// The id is known but the secret is not one of its secrets.
        case wrongSecret
        /// Past the token's `expiresAt`.
        case expired
        /// Revoked with `DELETE /v1/tokens/{id}`.
        case revoked
        /// An old secret whose rotation overlap has ended.
        case retired
    }

    /// What a valid token lacks.
    public enum Lack: Sendable, Equatable {
        /// None of its scopes grants the one needed.
        case scope
        /// Its `accounts` do not include this one.
        case account(String)
        /// Its `accounts` are not `*` and the target belongs to every account (a strings table).
        case allAccounts
        /// Its `environments` do not include this one.
        case environment(String)
        /// Its `accounts` are not `*` or its `environments` are not all of them, and the target reaches every
        /// account in every environment (a build declaration).
        case everything
        /// What the request would make or touch (a token, a webhook) reaches past the caller's own grant.
        case beyondGrant(String)
    }

    /// No `Authorization: Bearer` at all.
    case missingToken
    /// A token was presented and is not valid.
    case invalidToken(InvalidToken)
    /// A valid token that does not reach: the scope the request needs, and what it lacks.
    case insufficientScope(Scope, Lack)

    /// 401 or 403.
    public var status: Int {
        switch self {
        case .missingToken, .invalidToken: 401
        case .insufficientScope: 403
        }
    }

    /// The `WWW-Authenticate` field value: `Bearer realm="tabserver"`, then `error`, and `error_description` or
    /// `scope` (the needed scope, a space-delimited list of one).
    public var wwwAuthenticate: String {
        var challenge = "Bearer realm=\"\(Self.realm)\""
        switch self {
        case .missingToken: break
        case .invalidToken: challenge += ", error=\"invalid_token\", error_description=\"\(clientDescription)\""
        case .insufficientScope(let scope, _): challenge += ", error=\"insufficient_scope\", scope=\"\(scope.rawValue)\""
        }
        return challenge
    }

    /// What the client is told (a problem's `detail`; its `error_description` when the token is invalid): never
    /// whether a token id exists.
    public var clientDescription: String {
        switch self {
        case .missingToken: "the management plane needs Authorization: Bearer <token>"
        case .invalidToken(.malformed), .invalidToken(.unknown), .invalidToken(.wrongSecret): "the token is not valid"
        case .invalidToken(.expired): "the token has expired"
        case .invalidToken(.revoked): "the token was revoked"
        case .invalidToken(.retired): "the token was rotated and this secret's overlap has ended"
        case .insufficientScope(let scope, .scope): "the token does not have the scope '\(scope.rawValue)'"
        case .insufficientScope(_, .account(let account)): "the token's accounts do not include '\(account)'"
        case .insufficientScope(_, .allAccounts): "this needs a token whose accounts are '*'"
        case .insufficientScope(_, .everything): "this needs a token narrowed neither by accounts nor by environments"
        case .insufficientScope(_, .environment(let environment)): "the token's environments do not include '\(environment)'"
        case .insufficientScope(_, .beyondGrant(let what)): "\(what) reaches past this token's own scopes, accounts or environments"
        }
    }

    /// The reason for the audit log and the server's own log, which may say more than the client is told.
    public var description: String {
        switch self {
        case .invalidToken(let reason): "invalid_token (\(reason.rawValue))"
        default: clientDescription
        }
    }
}
