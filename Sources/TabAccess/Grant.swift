/// What an authenticated token may do: its scopes, the accounts and the environments it may touch. Bootstrap
/// tokens (`TABSERVER_ADMIN_TOKEN…`) are `admin` over everything.
public struct Grant: Sendable, Equatable {
    /// The token's name, recorded as the author of changes and the actor of audit entries.
    public let name: String
    /// The token's id; nil for a bootstrap token.
    public let tokenID: TokenID?
    /// The scopes held.
    public let scopes: Set<Scope>
    /// The accounts it may touch.
    public let accounts: [AccountGlob]
    /// The environments it may touch; nil is all of them.
    public let environments: Set<String>?

    /// A grant; `accounts` defaults to every account and `environments` to all.
    public init(
        name: String, tokenID: TokenID?, scopes: Set<Scope>, accounts: [AccountGlob] = [.all], environments: Set<String>? = nil
    ) {
        self.name = name
        self.tokenID = tokenID
        self.scopes = scopes
        self.accounts = accounts
        self.environments = environments
    }

    /// The grant of a bootstrap token called `name`: `admin`, every account, every environment.
    public static func bootstrap(name: String) -> Grant { Grant(name: name, tokenID: nil, scopes: [.admin]) }

    /// Whether the grant covers `account`.
    public func covers(account: some StringProtocol) -> Bool { accounts.contains { $0.matches(account) } }

    /// Whether the grant covers every account (needed for what belongs to none, like strings tables).
    public var coversAllAccounts: Bool { accounts.contains { $0.isAll } }

    /// Whether the grant covers `environment`.
    public func covers(environment: String) -> Bool { environments?.contains(environment) ?? true }

    /// Whether a list entry about `account` (nil: about no account) in `environment` (nil: in none) may be shown:
    /// `read` is held and the account and environment are covered. Lists, `/v1/events` and `/v1/audit` keep only
    /// the entries this is true of.
    public func mayRead(account: String?, environment: String?) -> Bool {
        authorize(AccessRequest(scope: .read, account: account, environment: environment)) == nil
    }

    /// Whether a token or webhook with these scopes, accounts and environments would reach nothing this grant does
    /// not: nobody gives more than they hold, and list, rotate and revoke reach only tokens within the caller's
    /// grant (docs/security.md, "A narrowed admin"). `environments` nil is every environment.
    public func encloses(scopes: some Collection<Scope>, accounts: [AccountGlob], environments: Set<String>?) -> Bool {
        scopes.allSatisfy { self.scopes.grant($0) } && accounts.allSatisfy(encloses(glob:)) && encloses(environments: environments)
    }

    /// Whether `token` reaches nothing this grant does not (``encloses(scopes:accounts:environments:)``).
    public func encloses(_ token: AccessToken) -> Bool {
        encloses(scopes: token.scopes, accounts: token.accounts, environments: token.environments)
    }

    /// Whether a webhook for `accounts` reaches nothing this grant does not: its accounts within the grant's, and
    /// the grant over every environment (a webhook hears the events of all of them).
    public func encloses(webhookAccounts accounts: [AccountGlob]) -> Bool {
        environments == nil && accounts.allSatisfy(encloses(glob:))
    }

    /// Whether every account `glob` names is covered by one of this grant's globs.
    public func encloses(glob: AccountGlob) -> Bool { accounts.contains { $0.encloses(glob) } }

    /// Whether `environments` (nil: every one) are all within this grant's.
    public func encloses(environments other: Set<String>?) -> Bool {
        guard let mine = environments else { return true }
        guard let other else { return false }
        return other.isSubset(of: mine)
    }

    /// Why the grant does not allow `request`, or nil when it does.
    public func authorize(_ request: AccessRequest) -> AccessRefusal? {
        guard scopes.grant(request.scope) else { return .insufficientScope(request.scope, .scope) }
        switch request.target {
        case .service: break
        case .account(let account): guard covers(account: account) else { return .insufficientScope(request.scope, .account(account)) }
        case .allAccounts: guard coversAllAccounts else { return .insufficientScope(request.scope, .allAccounts) }
        case .everything:
            guard coversAllAccounts, environments == nil else { return .insufficientScope(request.scope, .everything) }
        }
        if let environment = request.environment, !covers(environment: environment) {
            return .insufficientScope(request.scope, .environment(environment))
        }
        return nil
    }
}

/// One thing a request wants to do: the scope it needs, on what, in which environment.
public struct AccessRequest: Sendable, Equatable {
    /// What the request touches.
    public enum Target: Sendable, Equatable {
        /// Nothing that belongs to an account: validate, preview, tokens, webhooks, a list filtered per entry.
        case service
        /// One account's layout, history, rollout.
        case account(String)
        /// Something shared by every account: a global strings table.
        case allAccounts
        /// Something every account shares in every environment at once (the declared builds, which decide what a
        /// build's clients get everywhere): only a grant narrowed neither by accounts nor by environments reaches it.
        case everything
    }

    /// The scope needed.
    public let scope: Scope
    /// What it touches.
    public let target: Target
    /// The environment it touches, if any.
    public let environment: String?

    /// A request needing `scope` on `target` in `environment`.
    public init(scope: Scope, target: Target, environment: String? = nil) {
        self.scope = scope
        self.target = target
        self.environment = environment
    }

    /// A request about `account` (nil: about no account), as lists see their entries.
    public init(scope: Scope, account: String?, environment: String?) {
        self.init(scope: scope, target: account.map(Target.account) ?? .allAccounts, environment: environment)
    }
}
