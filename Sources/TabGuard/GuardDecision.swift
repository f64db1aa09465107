/// The guard's verdict on two arms' counts: no clock, no store. The caller applies a trip once (the rollout's
/// conditional update) and names it with ``GuardVerdict/reason``.
public enum GuardVerdict: Sendable, Hashable {
    /// Nothing to do: too few reports, or the candidate is within the rule.
    case hold
    /// The candidate exceeded the rule: do `action`, recording `reason`.
    case trip(action: GuardRule.Action, reason: String)
}

extension GuardRule {
    /// Decides on the candidate and stable arms' health.
    ///
    /// Trips when the candidate arm has at least ``minInstalls`` reporting installs and at least ``minFailures``
    /// failing ones, and its share of failing installs exceeds ``maxRate`` or exceeds ``maxRatio`` times the stable
    /// arm's share. A rule with neither bound never trips. With the stable share at zero, any candidate share above
    /// zero exceeds the ratio (the minimums keep one unlucky install from tripping it).
    public func decide(candidate: ArmHealth, stable: ArmHealth) -> GuardVerdict {
        let failing = candidate.failing(kind)
        guard candidate.installs >= minInstalls, failing >= minFailures, failing > 0 else { return .hold }
        let share = candidate.share(kind)
        let stableShare = stable.share(kind)
        var exceeded: [String] = []
        if let maxRate, share > maxRate { exceeded.append("above maxRate \(Self.number(maxRate))") }
        if let maxRatio, share > maxRatio * stableShare {
            exceeded.append("above \(Self.number(maxRatio)) × the stable share")
        }
        guard !exceeded.isEmpty else { return .hold }
        return .trip(action: action, reason: reason(candidate: candidate, stable: stable, exceeded: exceeded))
    }

    /// `guard tabFailed (tab news): candidate 20 of 60 installs failing (33.3%), stable 1 of 60 (1.7%); above 2 × the
    /// stable share`.
    func reason(candidate: ArmHealth, stable: ArmHealth, exceeded: [String]) -> String {
        var text = "guard \(kind.rawValue)"
        if kind == .tabFailed || kind == .failures, !candidate.byTab.isEmpty {
            let tabs = candidate.byTab.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(5).map(\.key)
            text += " (tab\(tabs.count == 1 ? "" : "s") \(tabs.joined(separator: ", ")))"
        }
        text += ": candidate \(candidate.failing(kind)) of \(candidate.installs) installs failing (\(Self.percent(candidate.share(kind))))"
        text += ", stable \(stable.failing(kind)) of \(stable.installs) (\(Self.percent(stable.share(kind))))"
        return text + "; " + exceeded.joined(separator: ", ")
    }

    static func percent(_ share: Double) -> String {
        let tenths = Int((share * 1000).rounded())
        return tenths % 10 == 0 ? "\(tenths / 10)%" : "\(tenths / 10).\(tenths % 10)%"
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
