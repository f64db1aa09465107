/// What one arm's installs reported, each install counted once per kind and tab: the numbers a guard decides on and
/// `GET …/layout/rollout` shows as `health`.
public struct ArmHealth: Sendable, Hashable {
    /// Installs that sent any report for the version the arm serves.
    public var installs: Int
    /// Installs that sent a `tabFailed`, `reverted` or `refused` report.
    public var failed: Int
    /// Installs per report kind.
    public var byKind: [ReportKind: Int]
    /// Installs that reported `tabFailed` per tab.
    public var byTab: [String: Int]

    public init(installs: Int = 0, failed: Int = 0, byKind: [ReportKind: Int] = [:], byTab: [String: Int] = [:]) {
        self.installs = installs
        self.failed = failed
        self.byKind = byKind
        self.byTab = byTab
    }

    public static let empty = ArmHealth()

    /// The installs failing under `kind`: `failed` for `failures`, else that kind's count.
    public func failing(_ kind: GuardRule.Kind) -> Int {
        switch kind {
        case .failures: failed
        case .tabFailed: byKind[.tabFailed] ?? 0
        case .reverted: byKind[.reverted] ?? 0
        case .refused: byKind[.refused] ?? 0
        }
    }

    /// Failing over reporting installs under `kind`; 0 with no reports.
    public func share(_ kind: GuardRule.Kind) -> Double {
        installs == 0 ? 0 : Double(failing(kind)) / Double(installs)
    }
}
