import Testing

@testable import TabDelivery

/// `--environments`: the list, its order and the names requests may give.
@Suite struct EnvironmentTests {
    let two = try! EnvironmentList(parsing: "staging,production")

    @Test func defaultIsProductionAlone() throws {
        #expect(EnvironmentList.default.names.map(\.text) == ["production"])
        #expect(EnvironmentList.default.entry == .production)
        #expect(EnvironmentList.default.served == .production)
        #expect(EnvironmentList.default.isDefault)
        #expect(try EnvironmentList(parsing: "production").isDefault)
    }

    @Test func writesEnterTheFirstAndClientsReadTheLast() throws {
        let three = try EnvironmentList(parsing: " dev , staging,production ")
        #expect(three.names.map(\.text) == ["dev", "staging", "production"])
        #expect(three.entry.text == "dev")
        #expect(three.served.text == "production")
        #expect(three.next(after: three.entry)?.text == "staging")
        #expect(three.next(after: three.served) == nil)
        #expect(!three.isDefault)
    }

    @Test(arguments: [
        ("", "at least one"), ("staging,,production", "item 2"), ("staging,", "item 2"), ("Production", "lowercase"),
        ("staging,staging", "twice"), ("stag ing", "only lowercase"), ("prod:eu", "only lowercase"), ("1st", "start with"),
        (String(repeating: "a", count: 33), "longer than 32"),
    ])
    func refusesBadListsSayingWhy(value: String, why: String) {
        let error = failure { try EnvironmentList(parsing: value) }
        guard case .invalidEnvironmentList(let message) = error else {
            Issue.record("expected invalidEnvironmentList, got \(String(describing: error))")
            return
        }
        #expect(message.contains(why), "\(value): \(message)")
    }

    @Test func requestsNameAnEnvironmentOrGetTheDefaultOfTheirPlane() throws {
        #expect(try two.forReading(nil).text == "production")
        #expect(try two.forReading("").text == "production")
        #expect(try two.forReading("staging").text == "staging")
        #expect(try two.forManaging(nil).text == "staging")
        #expect(try two.forManaging("production").text == "production")
        let unknown = failure { try two.forReading("qa") }
        #expect(unknown == .unknownEnvironment("qa"))
        #expect(unknown?.status == 404)
        #expect(failure { try two.forManaging("Production") }?.status == 404)
    }

    @Test func theQueryWinsOverTheHeaderWhichVaryThenNames() throws {
        #expect(try two.forReading(query: "staging", header: "production") == (EnvironmentName("staging")!, false))
        #expect(try two.forReading(query: nil, header: "staging") == (EnvironmentName("staging")!, true))
        #expect(try two.forReading(query: nil, header: nil) == (.production, true))
        #expect(try EnvironmentList.default.forReading(query: nil, header: nil) == (.production, false))
        #expect(failure { try two.forReading(query: nil, header: "qa") } == .unknownEnvironment("qa"))
    }

    @Test func versionsListTheEnvironmentsThatPointAtThem() {
        let staging = EnvironmentName("staging")!
        let pointers = [staging: Pointer(version: 4, etag: "\"v4\""), .production: Pointer(version: 4, etag: "\"v4\"")]
        #expect(two.pointing(at: 4, pointers) == [staging, .production])
        #expect(two.pointing(at: 3, pointers).isEmpty)
        #expect(two.lacking([staging: Pointer(version: 1, etag: "\"v1\"")]) == [.production])
    }

    @Test func environmentNamesAreCheckedOnce() {
        #expect(EnvironmentName("eu-beta_2")?.text == "eu-beta_2")
        #expect(EnvironmentName("") == nil)
        #expect(EnvironmentName("a/b") == nil)
        #expect(EnvironmentName(String(repeating: "a", count: 32)) != nil)
    }
}

/// Preconditions on a pointer, and what a layout write does to it (`?publish=false` drafts).
@Suite struct WriteDecisionTests {
    let current = Pointer(version: 3, etag: "\"v3\"")
    let now = time("2026-11-25T16:00:00Z")

    @Test func preconditionsFollowTheWriteRule() {
        #expect(failure { try Precondition.none.check(current: nil) } == nil)
        #expect(failure { try Precondition.ifNoneMatchAny.check(current: nil) } == nil)
        #expect(failure { try Precondition.none.check(current: "\"v3\"") } == .preconditionRequired)
        #expect(failure { try Precondition.ifNoneMatchAny.check(current: "\"v3\"") } == .preconditionFailed(current: "\"v3\""))
        #expect(failure { try Precondition.ifMatch(["\"v2\""]).check(current: "\"v3\"") } == .preconditionFailed(current: "\"v3\""))
        #expect(failure { try Precondition.ifMatch(["\"v2\"", "\"v3\""]).check(current: "\"v3\"") } == nil)
        #expect(failure { try Precondition.ifMatch(["*"]).check(current: "\"v3\"") } == nil)
        #expect(failure { try Precondition.ifMatch(["*"]).check(current: nil) } == .preconditionFailed(current: nil))
        #expect(RolloutError.preconditionRequired.status == 428)
        #expect(RolloutError.preconditionFailed(current: nil).status == 412)
    }

    @Test func publishQueryIsTrueOrFalse() throws {
        #expect(try PublishMode(query: nil) == .publish)
        #expect(try PublishMode(query: "true") == .publish)
        #expect(try PublishMode(query: "false") == .draft)
        let bad = failure { try PublishMode(query: "no") }
        #expect(bad?.status == 400)
        #expect(bad?.description.contains("publish") == true)
    }

    @Test func aPublishingWriteMovesThePointerAndCreatesWhenThereWasNone() throws {
        #expect(
            try WriteEffect.decide(mode: .publish, precondition: .ifMatch([current.etag]), current: current, rollout: nil, at: now)
                == .movePointer(creates: false))
        #expect(
            try WriteEffect.decide(mode: .publish, precondition: .none, current: nil, rollout: nil, at: now) == .movePointer(creates: true))
        #expect(
            failure { try WriteEffect.decide(mode: .publish, precondition: .none, current: current, rollout: nil, at: now) }
                == .preconditionRequired)
    }

    @Test func aDraftStoresAVersionAndLeavesThePointerEvenDuringARollout() throws {
        let rollout = try RolloutFixture.running(at: now)
        #expect(
            try WriteEffect.decide(mode: .draft, precondition: .ifMatch([current.etag]), current: current, rollout: rollout, at: now)
                == .storeDraft)
        #expect(try WriteEffect.decide(mode: .draft, precondition: .none, current: nil, rollout: nil, at: now) == .storeDraft)
        // A draft is written against what its writer saw: a stale tag is still 412.
        #expect(
            failure { try WriteEffect.decide(mode: .draft, precondition: .ifMatch(["\"v1\""]), current: current, rollout: nil, at: now) }
                == .preconditionFailed(current: current.etag))
    }

    @Test func aCompletionDueButUnrecordedHoldsPointerDecisionsBack() throws {
        let rollout = try RolloutFixture.running(at: now)
        let later = now.adding(milliseconds: 101 * 60_000)
        let write = failure {
            try WriteEffect.decide(mode: .draft, precondition: .ifMatch([current.etag]), current: current, rollout: rollout, at: later)
        }
        #expect(write == .conflict(.completionNotRecorded(id: 1)))
        let plan = try RolloutPlan.decode(bytes(RolloutFixture.steps), now: later)
        #expect(failure { try Rollout.start(plan, in: RolloutFixture.context(at: later, id: 2, latest: rollout)) }?.status == 409)
        let recorded = rollout.advanced(to: later)
        #expect(recorded.pointerMovesTo == 5)
        let moved = Pointer(version: 5, etag: "\"v5\"")
        #expect(
            try WriteEffect.decide(
                mode: .publish, precondition: .ifMatch([moved.etag]), current: moved, rollout: recorded.rollout, at: later)
                == .movePointer(creates: false))
    }

    @Test func aPublishingWriteDuringARolloutIs409AndFineAfterIt() throws {
        let rollout = try RolloutFixture.running(at: now)
        let refused = failure {
            try WriteEffect.decide(mode: .publish, precondition: .ifMatch([current.etag]), current: current, rollout: rollout, at: now)
        }
        #expect(refused == .conflict(.rolloutInProgress(id: rollout.id, environment: "production")))
        #expect(refused?.status == 409)
        let ended = try rollout.rolledBack(reason: nil, at: now).rollout
        #expect(
            try WriteEffect.decide(mode: .publish, precondition: .ifMatch([current.etag]), current: current, rollout: ended, at: now)
                == .movePointer(creates: false))
    }
}
