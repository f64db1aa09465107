/// What a token may do. `write` and `deploy` each imply `read`; `admin` implies everything (API.md, "Tokens,
/// scopes and audit").
public enum Scope: String, Sendable, Codable, CaseIterable, Comparable {
    /// Management GETs, `/v1/events`, `/v1/audit`.
    case read
    /// Sources and strings, validate, preview.
    case write
    /// Promote, rollouts, `/v1/alerts`.
    case deploy
    /// Everything, including tokens and webhooks.
    case admin

    /// The scopes this one grants, itself included.
    public var implied: Set<Scope> {
        switch self {
        case .read: [.read]
        case .write: [.read, .write]
        case .deploy: [.read, .deploy]
        case .admin: Set(Scope.allCases)
        }
    }

    /// Whether holding this scope is enough for something that needs `needed`.
    public func grants(_ needed: Scope) -> Bool { implied.contains(needed) }

    public static func < (a: Scope, b: Scope) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!  // Both are cases, so both are found.
    }
}

extension Collection<Scope> {
    /// Whether any of these scopes grants `needed`.
    public func grant(_ needed: Scope) -> Bool { contains { $0.grants(needed) } }
}
