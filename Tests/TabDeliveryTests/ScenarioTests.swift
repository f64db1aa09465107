import Testing

@testable import TabDelivery

/// The model end to end, as an operator uses it: write to staging, draft, promote, roll out gradually, complete.
@Suite struct ScenarioTests {
    let environments = try! EnvironmentList(parsing: "staging,production")
    let staging = EnvironmentName("staging")!
    let t0 = time("2026-11-25T16:00:00Z")

    func tag(_ version: Int) -> Pointer { Pointer(version: version, etag: "\"v\(version)\"") }

    @Test func stageDraftPromoteRollOutAndComplete() throws {
        var jack = EnvironmentPointers()
        let available: @Sendable (Int) -> VersionAvailability = { (1...3).contains($0) ? .available : .missing }
        // Version 1 enters staging (the first environment), created without a precondition.
        let entry = try environments.forManaging(nil)
        #expect(entry == staging)
        #expect(try jack.write(in: entry, mode: .publish, precondition: .none, rollout: nil, at: t0) == .movePointer(creates: true))
        jack.move(entry, to: tag(1))
        // Promoted to production, new there: no precondition needed.
        let first = try PromotionRequest.decode(bytes(#"{"from": "staging"}"#), environments: environments, now: t0)
        let outcome = try jack.promote(
            first, account: "jack", precondition: .none, latest: nil, rolloutID: 1, at: t0, availability: available)
        #expect(outcome == .movePointer(version: 1, creates: true))
        jack.move(.production, to: tag(1))
        // Version 2 in staging; version 3 stored as a draft, staging still serves 2.
        #expect(
            try jack.write(in: staging, mode: .publish, precondition: .ifMatch(["\"v1\""]), rollout: nil, at: t0)
                == .movePointer(creates: false))
        jack.move(staging, to: tag(2))
        #expect(try jack.write(in: staging, mode: .draft, precondition: .ifMatch(["\"v2\""]), rollout: nil, at: t0) == .storeDraft)
        #expect(environments.pointing(at: 1, jack.pointers) == [.production])
        // Staging's version 2 goes to production gradually.
        let gradual = try PromotionRequest.decode(
            bytes(#"{"from": "staging", "to": "production", "rollout": {"steps": [{"percent": 10, "hold": "PT1H"}]}}"#),
            environments: environments, now: t0)
        guard
            case .rollout(let started) = try jack.promote(
                gradual, account: "jack", precondition: .ifMatch(["\"v1\""]), latest: nil, rolloutID: 1, at: t0, availability: available)
        else {
            Issue.record("expected a rollout")
            return
        }
        var rollout = started.rollout
        #expect(rollout.seed == "jack:production:1")
        // While it runs, production may not be published to, but staging may.
        let later = t0.adding(milliseconds: 30 * 60_000)
        #expect(
            failure { try jack.write(in: .production, mode: .publish, precondition: .ifMatch(["\"v1\""]), rollout: rollout, at: later) }?
                .status
                == 409)
        #expect(
            try jack.write(in: staging, mode: .publish, precondition: .ifMatch(["\"v2\""]), rollout: nil, at: later)
                == .movePointer(creates: false))
        // install-0's bucket under this seed is 4673 (docs/rollouts.md, "Who gets the candidate"): not in the first 10 %.
        #expect(rollout.version(for: install("install-0"), at: later) == 1)
        // The hour ends: the clock completes the rollout and production moves to version 2.
        let done = rollout.advanced(to: t0.adding(milliseconds: 3_600_000))
        #expect(done.transitions.map(\.kind) == [.completed])
        rollout = done.rollout
        jack.move(.production, to: tag(try #require(done.pointerMovesTo)))
        #expect(rollout.version(for: install("install-0"), at: later) == 2)
        #expect(environments.pointing(at: 2, jack.pointers) == [staging, .production])
        #expect(
            try jack.write(in: .production, mode: .publish, precondition: .ifMatch(["\"v2\""]), rollout: rollout, at: later)
                == .movePointer(creates: false))
    }
}
