import TabGuard
import Testing

@testable import TabDelivery

/// A rollout's guard: read with its pointers, kept in the record, changed by `PATCH`, and applied once.
@Suite struct RolloutGuardTests {
    static let now = time("2026-11-28T10:00:00Z")
    static let guarded =
        #"{"version": 5, "percent": 50, "guard": {"kind": "tabFailed", "maxRatio": 2, "minInstalls": 10, "minFailures": 5, "action": "rollback"}}"#

    static func arm(_ installs: Int, failing: Int) -> ArmHealth {
        ArmHealth(
            installs: installs, failed: failing, byKind: [.rendered: installs, .tabFailed: failing],
            byTab: failing > 0 ? ["news": failing] : [:])
    }

    @Test func theGuardIsReadAtStartAndKeptInTheRecord() throws {
        let rollout = try RolloutFixture.start(Self.guarded, at: Self.now).rollout
        let rule = try #require(rollout.guardRule)
        #expect(rule == GuardRule(kind: .tabFailed, maxRatio: 2, minInstalls: 10, minFailures: 5, action: .rollback))
        #expect(Rollout(record: rollout.record)?.guardRule == rule)
        let plain = try RolloutFixture.start(#"{"version": 5, "percent": 50}"#, at: Self.now).rollout
        #expect(plain.guardRule == nil && Rollout(record: plain.record)?.guardRule == nil)
        let document = String(decoding: rollout.document(at: Self.now, served: ServedCounts(candidate: 0, stable: 0)).json, as: UTF8.self)
        #expect(
            document.contains(#""guard":{"action":"rollback","kind":"tabFailed","maxRatio":2,"minFailures":5,"minInstalls":10}"#),
            "\(document)")
    }

    @Test func aGuardOfAKindThisBuildDoesNotKnowIsReadAsNoGuardAndTheRolloutStands() throws {
        let rollout = try RolloutFixture.start(Self.guarded, at: Self.now).rollout
        let text = String(decoding: rollout.record, as: UTF8.self)
        #expect(text.contains(#""kind":"tabFailed""#), "\(text)")
        // As a newer build would write it: a kind, then an action, that this build has never heard of.
        for (from, to) in [(#""kind":"tabFailed""#, #""kind":"slowLaunch""#), (#""action":"rollback""#, #""action":"page""#)] {
            let future = Array(text.replacingOccurrences(of: from, with: to).utf8)
            let read = try #require(Rollout(record: future), "the rollout itself is still read")
            #expect(read.guardRule == nil && read.candidateVersion == rollout.candidateVersion)
        }
    }

    @Test func aBadGuardIsRefusedAtItsPointers() {
        let error = failure {
            try RolloutFixture.start(
                #"{"version": 5, "percent": 50, "guard": {"kind": "crashes", "maxRate": 2, "minInstalls": -1, "action": "stop", "x": 1}}"#,
                at: Self.now)
        }
        #expect(
            pointers(error) == ["/guard/x", "/guard/kind", "/guard/maxRate", "/guard/minInstalls", "/guard/action"], "\(messages(error))")
        let noBound = failure { try RolloutFixture.start(#"{"version": 5, "percent": 50, "guard": {"kind": "failures"}}"#, at: Self.now) }
        #expect(pointers(noBound) == ["/guard"])
    }

    @Test func patchSetsAndRemovesTheGuard() throws {
        let rollout = try RolloutFixture.start(#"{"version": 5, "percent": 50}"#, at: Self.now).rollout
        let set = try rollout.patched(RolloutPatch.decode(bytes(#"{"guard": {"kind": "refused", "maxRate": 0.1}}"#)), at: Self.now)
        #expect(set.transitions.isEmpty && set.rollout.guardRule?.kind == .refused && set.rollout.revision == rollout.revision + 1)
        #expect(set.rollout.guardRule?.action == .pause && set.rollout.guardRule?.minInstalls == 20)
        let removed = try set.rollout.patched(RolloutPatch.decode(bytes(#"{"guard": null}"#)), at: Self.now)
        #expect(removed.rollout.guardRule == nil)
    }

    @Test func aTripRollsBackOnceWithTheReason() throws {
        let rollout = try RolloutFixture.start(Self.guarded, at: Self.now).rollout
        #expect(rollout.guarded(candidate: Self.arm(60, failing: 20), stable: Self.arm(60, failing: 20), at: Self.now) == nil)
        let change = try #require(rollout.guarded(candidate: Self.arm(60, failing: 20), stable: Self.arm(60, failing: 1), at: Self.now))
        #expect(change.rollout.status(at: Self.now).state == .rolledBack)
        #expect(change.transitions.map(\.kind) == [.rolledBack])
        #expect(change.transitions.first?.reason?.contains("candidate 20 of 60") == true)
        #expect(change.rollout.guarded(candidate: Self.arm(60, failing: 30), stable: Self.arm(60, failing: 1), at: Self.now) == nil, "once")
    }

    @Test func aPauseGuardPausesOnceWithTheReason() throws {
        let rollout = try RolloutFixture.start(
            #"{"version": 5, "percent": 50, "guard": {"kind": "failures", "maxRate": 0.1, "minInstalls": 10, "minFailures": 5}}"#,
            at: Self.now
        ).rollout
        let change = try #require(rollout.guarded(candidate: Self.arm(50, failing: 10), stable: .empty, at: Self.now))
        #expect(
            change.rollout.status(at: Self.now).state == .paused && change.transitions.last?.reason?.hasPrefix("guard failures") == true)
        #expect(change.rollout.guarded(candidate: Self.arm(50, failing: 20), stable: .empty, at: Self.now) == nil, "paused already")
    }

    @Test func reportsAreReadWholeOrRefusedAtTheirPointers() throws {
        let body = try ClientReports.decode(
            bytes(
                #"{"installId": "a", "reports": [{"version": 2, "kind": "rendered"}, {"version": 2, "kind": "tabFailed", "tab": "news", "at": "2026-11-28T09:00:00Z"}]}"#
            ))
        #expect(body.install.text == "a" && body.reports.map(\.kind) == [.rendered, .tabFailed] && body.reports[1].tab == "news")
        let bad = failure {
            try ClientReports.decode(
                bytes(
                    #"{"installId": "", "reports": [{"version": 0, "kind": "tabFailed"}, {"version": 1, "kind": "refused", "at": "yesterday"}]}"#
                ))
        }
        #expect(pointers(bad) == ["/installId", "/reports/0/version", "/reports/0", "/reports/1/at"], "\(messages(bad))")
        #expect(failure { try ClientReports.decode(Array(repeating: 0x20, count: 16 * 1024 + 1)) } == .tooLarge(limit: 16 * 1024))
    }

    @Test func anUnknownKindAndAnEmptyTabOrSeedAreRefusedSayingWhatIsAllowed() {
        let bad = failure {
            try ClientReports.decode(
                bytes(
                    #"{"installId": "a", "reports": [{"version": 2, "kind": "crashed"}, {"version": 2, "kind": "tabFailed", "tab": ""}]}"#))
        }
        #expect(pointers(bad) == ["/reports/0/kind", "/reports/1/tab"])
        #expect(messages(bad) == #"must be one of "rendered", "tabFailed", "reverted", "refused", not 'crashed' | is empty"#)
        let seedless = failure { try RolloutFixture.start(#"{"version": 5, "percent": 50, "seed": ""}"#, at: Self.now) }
        #expect(pointers(seedless) == ["/seed"])
        #expect(messages(seedless) == "is empty; leave it out for the default seed")
    }
}
