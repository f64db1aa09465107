/// What a token may do. `write`, `deploy` and `approve` each imply `read`; `deploy` implies `rollback`; `admin` implies
/// everything (docs/access-and-webhooks.md).
public enum Scope: String, Sendable, Codable, CaseIterable, Comparable {
    /// Management GETs, `/v1/events`, `/v1/audit`.
    case read
    /// Sources and strings, validate, preview.
    case write
    /// Promote, rollouts, `/v1/alerts`.
    case deploy
    /// Rolling a rollout back, by hand or through `/v1/alerts`, and nothing else: Alertmanager's token.
    case rollback
    /// Approving and rejecting change requests (and reading).
    case approve
    /// Everything, including tokens and webhooks.
    case admin

    /// The scopes this one grants, itself included.
    public var implied: Set<Scope> {
        switch self {
        case .read: [.read]
        case .write: [.read, .write]
        case .deploy: [.read, .deploy, .rollback]
        case .rollback: [.rollback]
        case .approve: [.read, .approve]
        case .admin: Set(Scope.allCases)
        }
    }

    /// Whether holding this scope is enough for something that needs `needed`.
    public func grants(_ needed: Scope) -> Bool { implied.contains(needed) }

    public static func < (a: Scope, b: Scope) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!  // Both are cases, so both are found.
    }
}

extension Scope {
    /// Every scope's name, in order, for messages: `read, write, deploy, rollback, approve, admin`.
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")
}

extension Collection<Scope> {
    /// Whether any of these scopes grants `needed`.
    public func grant(_ needed: Scope) -> Bool { contains { $0.grants(needed) } }
}
