import Testing

@testable import TabDelivery

/// The rollout state machine with the clock passed in: starting, the share by the clock, the steps recorded once,
/// operators' changes, and who gets which version.
@Suite struct RolloutStateMachineTests {
    let t0 = time("2026-11-25T16:00:00Z")

    func minutes(_ n: Int64) -> Timestamp { t0.adding(milliseconds: n * 60_000) }

    // MARK: Starting

    @Test func startingRecordsOneStartAndServesTheFirstStep() throws {
        let change = try RolloutFixture.start(RolloutFixture.steps, at: t0)
        #expect(change.transitions.map(\.kind) == [.started])
        #expect(change.pointerMovesTo == nil)
        let rollout = change.rollout
        #expect(rollout.candidateVersion == 5 && rollout.stableVersion == 3)
        #expect(rollout.seed == "jack:production:1")
        #expect(rollout.status(at: t0) == .init(state: .running, percent: percent(5), step: 0, nextChangeAt: minutes(10)))
    }

    @Test func startChecksThePreconditionThenTheStateThenTheVersion() {
        let plan = try! RolloutPlan.decode(bytes(RolloutFixture.steps), now: t0)
        func start(_ plan: RolloutPlan, _ context: RolloutStartContext) -> RolloutError? {
            failure { try Rollout.start(plan, in: context) }
        }
        #expect(start(plan, RolloutFixture.context(at: t0, precondition: .none)) == .preconditionRequired)
        #expect(start(plan, RolloutFixture.context(at: t0, precondition: .ifMatch(["\"v2\""]))) == .preconditionFailed(current: "\"v3\""))
        #expect(
            start(plan, RolloutFixture.context(at: t0, current: nil, precondition: .none))
                == .conflict(.noStableVersion(account: "jack", environment: "production")))
        let running = try! RolloutFixture.running(at: t0)
        let second = start(plan, RolloutFixture.context(at: minutes(1), id: 2, latest: running))
        #expect(second == .conflict(.rolloutInProgress(id: 1, environment: "production")))
        #expect(second?.status == 409)
        var other = plan
        other.version = 9
        #expect(pointers(start(other, RolloutFixture.context(at: t0))) == ["/version"])
        other.version = 4
        #expect(messages(start(other, RolloutFixture.context(at: t0))).contains("deletion"))
        other.version = 3
        #expect(messages(start(other, RolloutFixture.context(at: t0))).contains("serves already"))
    }

    @Test func aSecondRolloutMayStartOnceTheFirstHasEnded() throws {
        let first = try RolloutFixture.running(at: t0).rolledBack(reason: "bad", at: minutes(1)).rollout
        let plan = try RolloutPlan.decode(bytes(RolloutFixture.steps), now: minutes(2))
        let second = try Rollout.start(plan, in: RolloutFixture.context(at: minutes(2), id: 2, latest: first))
        #expect(second.rollout.id == 2 && second.rollout.seed == "jack:production:2")
    }

    // MARK: The clock

    @Test func theShareFollowsTheStepsByTheClock() throws {
        let rollout = try RolloutFixture.running(at: t0)
        let expected: [(Int64, RolloutState, Double, Int?)] = [
            (0, .running, 5, 0), (9, .running, 5, 0), (10, .running, 25, 1), (39, .running, 25, 1), (40, .running, 100, 2),
            (99, .running, 100, 2), (100, .completed, 100, nil), (1_000, .completed, 100, nil),
        ]
        for (minute, state, share, step) in expected {
            let status = rollout.status(at: minutes(minute))
            #expect(status.state == state && status.percent == percent(share) && status.step == step, "at +\(minute) min: \(status)")
        }
        #expect(rollout.status(at: minutes(100)).endedAt == minutes(100))
    }

    @Test func eachStepIsRecordedOnceWithTheTimeItWasDue() throws {
        let rollout = try RolloutFixture.running(at: t0)
        #expect(rollout.advanced(to: minutes(5)).transitions.isEmpty)
        let first = rollout.advanced(to: minutes(45))
        #expect(first.transitions.map(\.kind) == [.stepped, .stepped])
        #expect(first.transitions.map(\.at) == [minutes(10), minutes(40)])
        #expect(first.transitions.map(\.percent) == [percent(25), percent(100)])
        #expect(first.rollout.revision == rollout.revision + 1)
        #expect(first.pointerMovesTo == nil)
        // A second replica that read the recorded rollout finds nothing to record.
        #expect(first.rollout.advanced(to: minutes(45)).transitions.isEmpty)
        let last = first.rollout.advanced(to: minutes(120))
        #expect(last.transitions.map(\.kind) == [.completed])
        #expect(last.transitions.first?.at == minutes(100))
        #expect(last.pointerMovesTo == 5)
        #expect(last.rollout.advanced(to: minutes(500)).transitions.isEmpty)
    }

    @Test func whatIsServedAgreesWithWhatIsRecordedAtEveryTime() throws {
        let rollout = try RolloutFixture.running(at: t0)
        var recorded = rollout
        for second in stride(from: Int64(0), through: 7_000, by: 37) {
            let now = t0.adding(milliseconds: second * 1000)
            recorded = recorded.advanced(to: now).rollout
            #expect(recorded.status(at: now) == rollout.status(at: now), "at +\(second) s")
        }
    }

    @Test func aScheduledRolloutServesOnlyItsTestersUntilStartAt() throws {
        let json = #"{"version": 5, "percent": 100, "startAt": "2026-11-25T17:00:00Z", "installs": ["tester"]}"#
        let change = try RolloutFixture.start(json, at: t0)
        #expect(change.transitions.map(\.kind) == [.scheduled])
        let rollout = change.rollout
        #expect(rollout.status(at: minutes(59)) == .init(state: .scheduled, percent: .zero, nextChangeAt: minutes(60)))
        #expect(rollout.arm(for: install("tester"), at: minutes(1)) == .candidate)
        #expect(rollout.arm(for: install("someone"), at: minutes(1)) == .stable)
        #expect(rollout.arm(for: install("someone"), at: minutes(60)) == .candidate)
        #expect(failure { try rollout.patched(RolloutPatch(paused: true), at: minutes(1)) } == .conflict(.rolloutNotStarted(id: 1)))
        let started = rollout.advanced(to: minutes(61))
        #expect(started.transitions.map(\.kind) == [.started])
        #expect(started.transitions.first?.at == minutes(60))
        #expect(started.rollout.advanced(to: minutes(62)).transitions.isEmpty)
        #expect(rollout.isUnderWay(at: minutes(1)))
    }

    // MARK: Operators' changes

    @Test func pauseStopsTheHoldAndResumeContinuesIt() throws {
        let rollout = try RolloutFixture.running(at: t0)
        let paused = try rollout.patched(RolloutPatch(paused: true), at: minutes(5))
        #expect(paused.transitions.map(\.kind) == [.paused])
        #expect(paused.rollout.status(at: minutes(60)) == .init(state: .paused, percent: percent(5), step: 0))
        #expect(paused.rollout.advanced(to: minutes(60)).transitions.isEmpty)
        #expect(try paused.rollout.patched(RolloutPatch(paused: true), at: minutes(6)).transitions.isEmpty)
        let resumed = try paused.rollout.patched(RolloutPatch(paused: false), at: minutes(60))
        #expect(resumed.transitions.map(\.kind) == [.resumed])
        // Five minutes of the first hold were left: the next step is due five minutes after resuming.
        #expect(resumed.rollout.status(at: minutes(60)).nextChangeAt == minutes(65))
        #expect(resumed.rollout.status(at: minutes(65)).percent == percent(25))
    }

    @Test func percentOnlyGoesUp() throws {
        let rollout = try RolloutFixture.running(at: t0).advanced(to: minutes(15)).rollout
        let down = failure { try rollout.patched(RolloutPatch(percent: percent(10)), at: minutes(15)) }
        #expect(down == .conflict(.percentDownward(current: percent(25), requested: percent(10))))
        #expect(down?.status == 409)
        #expect(try rollout.patched(RolloutPatch(percent: percent(25)), at: minutes(15)).transitions.isEmpty)
    }

    @Test func raisingToAStepStartsThatStepsHold() throws {
        let rollout = try RolloutFixture.running(at: t0)
        let advanced = try rollout.patched(RolloutPatch(percent: percent(25)), at: minutes(3))
        #expect(advanced.transitions.map(\.kind) == [.raised])
        #expect(advanced.rollout.status(at: minutes(3)) == .init(state: .running, percent: percent(25), step: 1, nextChangeAt: minutes(33)))
        #expect(advanced.rollout.status(at: minutes(33)).percent == percent(100))
    }

    @Test func raisingBetweenStepsKeepsTheFloorUntilAStepPassesIt() throws {
        let rollout = try RolloutFixture.running(at: t0)
        let raised = try rollout.patched(RolloutPatch(percent: percent(40)), at: minutes(3)).rollout
        // 40 % lies between the 25 % step and the 100 % one: step 1's hold starts now, at 40 %.
        #expect(raised.status(at: minutes(3)) == .init(state: .running, percent: percent(40), step: 1, nextChangeAt: minutes(33)))
        #expect(raised.status(at: minutes(33)).percent == percent(100))
        let fixed = try RolloutFixture.start(#"{"version": 5, "percent": 10}"#, at: t0).rollout
        let higher = try fixed.patched(RolloutPatch(percent: percent(30)), at: minutes(1)).rollout
        #expect(higher.status(at: minutes(10_000)) == .init(state: .running, percent: percent(30)))
    }

    @Test func completeMovesThePointerToTheCandidateOnce() throws {
        let rollout = try RolloutFixture.running(at: t0)
        let completed = try rollout.completed(at: minutes(12))
        #expect(completed.transitions.map(\.kind) == [.stepped, .completed])
        #expect(completed.pointerMovesTo == 5)
        #expect(completed.rollout.status(at: minutes(13)).state == .completed)
        #expect(completed.rollout.arm(for: nil, at: minutes(13)) == .candidate)
        #expect(failure { try completed.rollout.completed(at: minutes(14)) } == .conflict(.rolloutEnded(id: 1, state: .completed)))
        #expect(failure { try completed.rollout.rolledBack(reason: nil, at: minutes(14)) }?.status == 409)
        #expect(failure { try completed.rollout.patched(RolloutPatch(percent: .all), at: minutes(14)) }?.status == 409)
        // A completion the clock made due, not yet recorded, is what an operator's complete records.
        let late = try rollout.completed(at: minutes(200))
        #expect(late.transitions.map(\.kind) == [.stepped, .stepped, .completed])
        #expect(late.transitions.last?.at == minutes(100))
    }

    @Test func rollbackGivesEveryoneTheStableVersionWithItsReason() throws {
        let rollout = try RolloutFixture.running(at: t0).advanced(to: minutes(45)).rollout
        let back = try rollout.rolledBack(reason: "TabCrashRate: crash rate above 2%", at: minutes(46))
        #expect(back.transitions.map(\.kind) == [.rolledBack])
        #expect(back.transitions.first?.reason == "TabCrashRate: crash rate above 2%")
        #expect(back.pointerMovesTo == nil)
        #expect(back.rollout.status(at: minutes(47)).state == .rolledBack)
        for n in 0..<200 {
            #expect(back.rollout.arm(for: install("install-\(n)"), at: minutes(47)) == .stable)
        }
        #expect(!back.rollout.isUnderWay(at: minutes(47)))
    }

    // MARK: Who gets what

    @Test func aMemberStaysAMemberUntilTheEnd() throws {
        let ids = (0..<3_000).map { install("install-\($0)") }
        var rollout = try RolloutFixture.running(at: t0)
        var members = Set<InstallID>()
        var now = t0
        func check() {
            let current = Set(ids.filter { rollout.arm(for: $0, at: now) == .candidate })
            #expect(members.isSubset(of: current), "someone lost the candidate at \(now)")
            members = current
        }
        for (minute, patch) in [
            (2, nil), (9, RolloutPatch(paused: true)), (20, RolloutPatch(percent: percent(30))), (25, RolloutPatch(paused: false)),
            (30, nil), (50, RolloutPatch(percent: percent(60))), (54, nil),
        ] as [(Int64, RolloutPatch?)] {
            now = minutes(minute)
            check()
            rollout = try patch.map { try rollout.patched($0, at: now).rollout } ?? rollout.advanced(to: now).rollout
            check()
        }
        #expect(members.count > 1_500 && members.count < 3_000)
        now = minutes(1_000)
        check()
        #expect(members.count == ids.count)
    }

    @Test func armsFollowTheBucketAndTheTesters() throws {
        let rollout = try RolloutFixture.start(#"{"version": 5, "percent": 50, "seed": "fixed-seed", "installs": ["qa-phone"]}"#, at: t0)
            .rollout
        // Bucket 1095 < 5000: the candidate; a request without an install id: the stable version.
        #expect(rollout.version(for: install("3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77"), at: t0) == 5)
        #expect(rollout.version(for: nil, at: t0) == 3)
        #expect(rollout.arm(for: install("qa-phone"), at: t0) == .candidate)
        let ids = (0..<10_000).map { install("i\($0)") }
        let share = ids.filter { rollout.arm(for: $0, at: t0) == .candidate }.count
        #expect((4_800...5_200).contains(share))
        #expect(
            ids.allSatisfy {
                rollout.arm(for: $0, at: t0) == (Bucket.of(installID: $0.text, seed: "fixed-seed") < 5_000 ? .candidate : .stable)
            })
    }

    @Test func aStepWakesOnlyTheInstallsItMoves() throws {
        let before = try RolloutFixture.running(at: t0)
        let after = before.advanced(to: minutes(10)).rollout
        let ids = (0..<5_000).map { install("w\($0)") }
        let woken = ids.filter { before.arm(for: $0, at: minutes(9)) != after.arm(for: $0, at: minutes(10)) }
        let expected = ids.filter {
            let bucket = $0.bucket(seed: before.seed)
            return bucket >= 500 && bucket < 2_500
        }
        #expect(woken == expected)
        #expect(before.arm(for: nil, at: minutes(9)) == after.arm(for: nil, at: minutes(10)))
    }
}
