import Testing

@testable import TabGuard

/// The guard's rule as docs/rollouts.md states it, by tables of counts: equal arms, tiny samples, a stable arm at zero,
/// each bound alone.
@Suite struct GuardDecisionTests {
    /// An arm of `installs` reporting installs of which `failing` reported `tabFailed` for `tab`.
    static func arm(_ installs: Int, failing: Int, tab: String = "news") -> ArmHealth {
        ArmHealth(
            installs: installs, failed: failing,
            byKind: failing == 0 ? [.rendered: installs] : [.rendered: installs, .tabFailed: failing],
            byTab: failing == 0 ? [:] : [tab: failing])
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var rule: GuardRule
        var candidate: ArmHealth
        var stable: ArmHealth
        var trips: Bool
        var testDescription: String { name }
    }

    static let ratio2 = GuardRule(kind: .tabFailed, maxRatio: 2, minInstalls: 10, minFailures: 5, action: .rollback)
    static let rate10 = GuardRule(kind: .tabFailed, maxRate: 0.1)

    static let cases: [Case] = [
        Case(
            name: "A/A: equal shares do not trip a ratio", rule: ratio2, candidate: arm(60, failing: 20), stable: arm(60, failing: 20),
            trips: false),
        Case(
            name: "A/A at a ratio of 1 does not trip either (exceeds, not reaches)",
            rule: GuardRule(kind: .tabFailed, maxRatio: 1, minInstalls: 10, minFailures: 5), candidate: arm(60, failing: 20),
            stable: arm(60, failing: 20), trips: false),
        Case(
            name: "the acceptance case: 20 of 60 against 1 of 60", rule: ratio2, candidate: arm(60, failing: 20),
            stable: arm(60, failing: 1), trips: true),
        Case(
            name: "just over twice the stable share", rule: ratio2, candidate: arm(100, failing: 21), stable: arm(100, failing: 10),
            trips: true),
        Case(
            name: "exactly twice the stable share holds", rule: ratio2, candidate: arm(100, failing: 20), stable: arm(100, failing: 10),
            trips: false),
        Case(
            name: "tiny sample: too few reporting installs", rule: ratio2, candidate: arm(9, failing: 9), stable: arm(60, failing: 0),
            trips: false),
        Case(
            name: "tiny sample: too few failing installs", rule: ratio2, candidate: arm(60, failing: 4), stable: arm(60, failing: 0),
            trips: false),
        Case(name: "the minimums reached exactly", rule: ratio2, candidate: arm(10, failing: 5), stable: arm(60, failing: 0), trips: true),
        Case(
            name: "stable at zero share: any candidate failure beyond the minimums trips", rule: ratio2, candidate: arm(200, failing: 5),
            stable: arm(200, failing: 0), trips: true),
        Case(
            name: "stable without any report counts as zero share", rule: ratio2, candidate: arm(10, failing: 10), stable: .empty,
            trips: true),
        Case(name: "nothing reported at all", rule: ratio2, candidate: .empty, stable: .empty, trips: false),
        Case(
            name: "zero failures with zero minimums never trips",
            rule: GuardRule(kind: .tabFailed, maxRatio: 2, minInstalls: 0, minFailures: 0),
            candidate: arm(50, failing: 0), stable: arm(50, failing: 0), trips: false),
        Case(name: "maxRate: 11% over 10%", rule: rate10, candidate: arm(100, failing: 11), stable: arm(100, failing: 11), trips: true),
        Case(name: "maxRate: 10% holds", rule: rate10, candidate: arm(100, failing: 10), stable: arm(100, failing: 0), trips: false),
        Case(
            name: "maxRate with the default minimums: 19 installs hold", rule: rate10, candidate: arm(19, failing: 19), stable: .empty,
            trips: false),
        Case(
            name: "either bound trips", rule: GuardRule(kind: .tabFailed, maxRatio: 10, maxRate: 0.2, minInstalls: 10, minFailures: 5),
            candidate: arm(100, failing: 30), stable: arm(100, failing: 10), trips: true),
        Case(
            name: "no bound never trips", rule: GuardRule(kind: .tabFailed), candidate: arm(100, failing: 100), stable: .empty, trips: false
        ),
        Case(
            name: "another kind's failures do not count", rule: GuardRule(kind: .reverted, maxRate: 0.1, minInstalls: 10, minFailures: 5),
            candidate: arm(100, failing: 50), stable: .empty, trips: false),
        Case(
            name: "failures counts every failing install",
            rule: GuardRule(kind: .failures, maxRate: 0.1, minInstalls: 10, minFailures: 5),
            candidate: ArmHealth(installs: 40, failed: 8, byKind: [.rendered: 40, .reverted: 3, .refused: 5]), stable: .empty, trips: true),
    ]

    @Test(arguments: cases)
    func decides(_ example: Case) {
        let verdict = example.rule.decide(candidate: example.candidate, stable: example.stable)
        if example.trips {
            guard case .trip(let action, _) = verdict else {
                Issue.record("\(example.name): held")
                return
            }
            #expect(action == example.rule.action)
        } else {
            #expect(verdict == .hold, "\(example.name)")
        }
    }

    @Test func reasonNamesTheKindTheTabAndBothArmsCounts() {
        let verdict = Self.ratio2.decide(candidate: Self.arm(60, failing: 20), stable: Self.arm(60, failing: 1))
        #expect(
            verdict
                == .trip(
                    action: .rollback,
                    reason: "guard tabFailed (tab news): candidate 20 of 60 installs failing (33.3%), stable 1 of 60 (1.7%); "
                        + "above 2 × the stable share"))
    }

    @Test func defaultsArePauseTwentyAndFive() {
        let rule = GuardRule(kind: .failures)
        #expect(rule.action == .pause)
        #expect(rule.minInstalls == 20)
        #expect(rule.minFailures == 5)
    }
}
