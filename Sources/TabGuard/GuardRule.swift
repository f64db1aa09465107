/// What a guarded rollout watches in the apps' reports, and what it does when the candidate looks worse than the
/// stable version (docs/rollouts.md, "Guarded rollouts").
public struct GuardRule: Sendable, Hashable {
    /// Which reports make an install a failing one.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case tabFailed, reverted, refused
        /// Any of the three.
        case failures

        /// The report kinds that count as a failure under this rule.
        public var reportKinds: Set<ReportKind> {
            switch self {
            case .tabFailed: [.tabFailed]
            case .reverted: [.reverted]
            case .refused: [.refused]
            case .failures: [.tabFailed, .reverted, .refused]
            }
        }
    }

    /// What the guard does to the rollout when it trips.
    public enum Action: String, Sendable, Hashable, CaseIterable {
        case pause, rollback
    }

    public var kind: Kind
    /// Trips when the candidate's share exceeds this many times the stable arm's share.
    public var maxRatio: Double?
    /// Trips when the candidate's share exceeds this fraction (0…1).
    public var maxRate: Double?
    /// The fewest reporting installs in the candidate arm before the guard may trip.
    public var minInstalls: Int
    /// The fewest failing installs in the candidate arm before the guard may trip.
    public var minFailures: Int
    public var action: Action

    public static let defaultMinInstalls = 20
    public static let defaultMinFailures = 5

    public init(
        kind: Kind, maxRatio: Double? = nil, maxRate: Double? = nil, minInstalls: Int = defaultMinInstalls,
        minFailures: Int = defaultMinFailures, action: Action = .pause
    ) {
        self.kind = kind
        self.maxRatio = maxRatio
        self.maxRate = maxRate
        self.minInstalls = minInstalls
        self.minFailures = minFailures
        self.action = action
    }
}

/// What an app reports about one version (`POST …/tabs/reports`).
public enum ReportKind: String, Sendable, Hashable, CaseIterable, Comparable {
    /// That version's tab bar was shown.
    case rendered
    /// A tab's root screen could not be made or failed on open (names the tab).
    case tabFailed
    /// The client's launch guard went back from that version.
    case reverted
    /// The client refused that version's answer.
    case refused

    public static func < (lhs: ReportKind, rhs: ReportKind) -> Bool { lhs.rawValue < rhs.rawValue }
}
