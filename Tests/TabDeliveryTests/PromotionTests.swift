import Testing

@testable import TabDelivery

/// `POST …/promote`: the body, then the decision against both pointers.
@Suite struct PromotionTests {
    let environments = try! EnvironmentList(parsing: "dev,staging,production")
    let now = time("2026-11-25T16:00:00Z")
    let staging = EnvironmentName("staging")!
    let production = EnvironmentName.production

    func decode(_ json: String, allowsRollout: Bool = true) throws(RolloutError) -> PromotionRequest {
        try PromotionRequest.decode(bytes(json), environments: environments, allowsRollout: allowsRollout, now: now)
    }

    /// `to`'s side: production pointing at `current`.
    func target(current: Pointer?, latest: Rollout? = nil, precondition: Precondition) -> RolloutStartContext {
        RolloutStartContext(
            account: "jack", environment: production, id: 8, current: current, latest: latest, precondition: precondition, now: now,
            availability: { _ in .available })
    }

    @Test func toDefaultsToTheNextEnvironment() throws {
        #expect(try decode(#"{"from": "staging"}"#) == PromotionRequest(from: staging, to: production))
        #expect(try decode(#"{"from": "dev"}"#).to == staging)
        #expect(try decode(#"{"from": "dev", "to": "production"}"#).to == production)
        #expect(try decode(#"{"from": "production", "to": "dev"}"#).to.text == "dev")
    }

    @Test(arguments: [
        (#"{"from": "staging", "to": "staging"}"#, "/to", "same"),
        (#"{"from": "production"}"#, "/from", "last"),
        (#"{"from": "qa"}"#, "/from", "no environment 'qa'"),
        (#"{"from": "staging", "to": "prod"}"#, "/to", "no environment 'prod'"),
        (#"{"to": "production"}"#, "", "required"),
        (#"{"from": 1}"#, "/from", "string"),
        (#"{"from": "staging", "when": "now"}"#, "/when", "unknown"),
        (#"{"from": "staging", "rollout": 5}"#, "/rollout", "object"),
        (#"{"from": "staging", "rollout": {"percent": 500}}"#, "/rollout/percent", "0 to 100"),
    ])
    func refusesABadBodyAtItsPointer(json: String, pointer: String, why: String) {
        let error = failure { try decode(json) }
        #expect(error?.status == 422)
        #expect(pointers(error) == [pointer], "\(json): \(String(describing: error))")
        #expect(messages(error).contains(why), "\(json): \(messages(error))")
    }

    @Test func stringsTablesArePromotedAtOnce() {
        #expect(pointers(failure { try decode(#"{"from": "staging", "rollout": {"percent": 5}}"#, allowsRollout: false) }) == ["/rollout"])
    }

    @Test func movesToToWhereFromPointsWithTheWritePreconditions() throws {
        let request = try decode(#"{"from": "staging"}"#)
        let source = Pointer(version: 7, etag: "\"v7\"")
        let old = Pointer(version: 5, etag: "\"v5\"")
        #expect(
            try request.decide(account: "jack", fromPointer: source, context: target(current: old, precondition: .ifMatch(["\"v5\""])))
                == .movePointer(version: 7, creates: false))
        #expect(
            failure { try request.decide(account: "jack", fromPointer: source, context: target(current: old, precondition: .none)) }
                == .preconditionRequired)
        #expect(
            failure {
                try request.decide(account: "jack", fromPointer: source, context: target(current: old, precondition: .ifMatch(["\"v7\""])))
            }
                == .preconditionFailed(current: "\"v5\""))
        // An account new to production: If-None-Match: * or nothing.
        #expect(
            try request.decide(account: "jack", fromPointer: source, context: target(current: nil, precondition: .ifNoneMatchAny))
                == .movePointer(version: 7, creates: true))
        #expect(
            try request.decide(account: "jack", fromPointer: source, context: target(current: nil, precondition: .none))
                == .movePointer(version: 7, creates: true))
        #expect(
            try request.decide(account: "jack", fromPointer: source, context: target(current: source, precondition: .ifMatch(["\"v7\""])))
                == .unchanged(version: 7))
    }

    @Test func anAccountFromLacksIs404() throws {
        let request = try decode(#"{"from": "staging"}"#)
        let error = failure { try request.decide(account: "jack", fromPointer: nil, context: target(current: nil, precondition: .none)) }
        #expect(error == .notFound(.layout(account: "jack", environment: "staging")))
        #expect(error?.status == 404)
    }

    @Test func aRolloutUnderWayInToRefusesThePromotion() throws {
        let request = try decode(#"{"from": "staging"}"#)
        let running = try RolloutFixture.running(at: now)
        let error = failure {
            try request.decide(
                account: "jack", fromPointer: Pointer(version: 6, etag: "\"v6\""),
                context: target(current: RolloutFixture.stable, latest: running, precondition: .ifMatch(["\"v3\""])))
        }
        #expect(error == .conflict(.rolloutInProgress(id: 1, environment: "production")))
    }

    @Test func aGradualPromotionStartsARolloutOfFromsVersion() throws {
        let request = try decode(#"{"from": "staging", "rollout": {"steps": [{"percent": 10, "hold": "PT1H"}]}}"#)
        let outcome = try request.decide(
            account: "jack", fromPointer: Pointer(version: 7, etag: "\"v7\""),
            context: target(current: Pointer(version: 5, etag: "\"v5\""), precondition: .ifMatch(["\"v5\""])))
        guard case .rollout(let change) = outcome else {
            Issue.record("expected a rollout, got \(outcome)")
            return
        }
        #expect(change.rollout.candidateVersion == 7 && change.rollout.stableVersion == 5)
        #expect(change.rollout.seed == "jack:production:8")
        let mismatch = try decode(#"{"from": "staging", "rollout": {"version": 6, "percent": 10}}"#)
        let error = failure {
            try mismatch.decide(
                account: "jack", fromPointer: Pointer(version: 7, etag: "\"v7\""),
                context: target(current: Pointer(version: 5, etag: "\"v5\""), precondition: .ifMatch(["\"v5\""])))
        }
        #expect(pointers(error) == ["/rollout/version"])
    }

    @Test func aStringsTableIsPromotedWithTheSamePreconditions() throws {
        let request = try decode(#"{"from": "staging"}"#, allowsRollout: false)
        let source = Pointer(version: 2, etag: "\"s2\"")
        #expect(
            try request.decide(locale: "de", fromPointer: source, current: nil, precondition: .none)
                == .movePointer(version: 2, creates: true))
        #expect(
            failure {
                try request.decide(locale: "de", fromPointer: source, current: Pointer(version: 1, etag: "\"s1\""), precondition: .none)
            }
                == .preconditionRequired)
        let missing = failure { try request.decide(locale: "de", fromPointer: nil, current: nil, precondition: .none) }
        #expect(missing == .notFound(.stringsTable(locale: "de", environment: "staging")))
    }
}
