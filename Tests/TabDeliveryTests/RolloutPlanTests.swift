import Testing

@testable import TabDelivery

/// The body of `POST …/layout/rollout`: what docs/rollouts.md shows decodes, everything else is a 422 naming its pointer.
@Suite struct RolloutPlanTests {
    let now = time("2026-11-25T16:00:00Z")

    @Test func decodesTheStepsOfTheContract() throws {
        let plan = try RolloutPlan.decode(
            bytes(
                #"{"version": 7, "steps": [{"percent": 5, "hold": "PT10M"}, {"percent": 25, "hold": "PT30M"}, {"percent": 100, "hold": "PT1H"}], "startAt": "2026-11-26T09:00:00Z", "seed": "spring", "installs": ["tester-1", "tester-2", "tester-1"]}"#
            ), now: now)
        #expect(plan.version == 7)
        guard case .steps(let steps) = plan.schedule else {
            Issue.record("expected steps")
            return
        }
        #expect(steps.map(\.percent.basisPoints) == [500, 2_500, 10_000])
        #expect(steps.map(\.hold.text) == ["PT10M", "PT30M", "PT1H"])
        #expect(steps.map(\.hold.milliseconds) == [600_000, 1_800_000, 3_600_000])
        #expect(plan.startAt == time("2026-11-26T09:00:00Z"))
        #expect(plan.seed == "spring")
        #expect(plan.installs.map(\.text) == ["tester-1", "tester-2"])
    }

    @Test func decodesAFixedPercent() throws {
        let plan = try RolloutPlan.decode(bytes(#"{"version": 2, "percent": 12.5}"#), now: now)
        #expect(plan.schedule == .fixed(percent(12.5)))
        #expect(plan.startAt == nil && plan.seed == nil && plan.installs.isEmpty)
    }

    @Test(arguments: [
        (#"{"version": 2, "steps": []}"#, "/steps", "empty"),
        (#"{"version": 2, "steps": [{"percent": 25, "hold": "PT1M"}, {"percent": 25, "hold": "PT1M"}]}"#, "/steps/1/percent", "only grows"),
        (#"{"version": 2, "steps": [{"percent": 50, "hold": "PT1M"}, {"percent": 10, "hold": "PT1M"}]}"#, "/steps/1/percent", "only grows"),
        (#"{"version": 2, "steps": [{"percent": 5, "hold": "10 minutes"}]}"#, "/steps/0/hold", "ISO 8601"),
        (#"{"version": 2, "steps": [{"percent": 5, "hold": "P31D"}]}"#, "/steps/0/hold", "30 days"),
        (#"{"version": 2, "steps": [{"percent": 5, "hold": "PT720H1S"}]}"#, "/steps/0/hold", "30 days"),
        (#"{"version": 2, "steps": [{"percent": 5, "hold": "P1M"}]}"#, "/steps/0/hold", "fixed length"),
        (#"{"version": 2, "steps": [{"percent": 5, "hold": 600}]}"#, "/steps/0/hold", "string"),
        (#"{"version": 2, "steps": [{"percent": 5}]}"#, "/steps/0", "hold"),
        (#"{"version": 2, "steps": [{"hold": "PT1M"}]}"#, "/steps/0", "percent"),
        (#"{"version": 2, "steps": [{"percent": 5, "hold": "PT1M", "wait": 1}]}"#, "/steps/0/wait", "unknown"),
        (#"{"version": 2, "steps": {"percent": 5}}"#, "/steps", "array"),
        (#"{"version": 2, "percent": 101}"#, "/percent", "0 to 100"),
        (#"{"version": 2, "percent": -1}"#, "/percent", "0 to 100"),
        (#"{"version": 2, "percent": "5"}"#, "/percent", "a number"),
        (#"{"version": 2, "percent": true}"#, "/percent", "a number"),
        (#"{"version": 2, "percent": 12.345}"#, "/percent", "hundredths"),
        (#"{"version": 2, "percent": 5, "steps": [{"percent": 5, "hold": "PT1M"}]}"#, "/percent", "not both"),
        (#"{"version": 2}"#, "", "steps"),
        (#"{"percent": 5}"#, "", "version"),
        (#"{"version": 0, "percent": 5}"#, "/version", "version number"),
        (#"{"version": "2", "percent": 5}"#, "/version", "version number"),
        (#"{"version": 2.5, "percent": 5}"#, "/version", "version number"),
        (#"{"version": 2, "percent": 5, "startAt": "2026-11-25T15:58:59Z"}"#, "/startAt", "in the past"),
        (#"{"version": 2, "percent": 5, "startAt": "9999-12-31T00:00:00Z"}"#, "/startAt", "more than a year ahead"),
        (#"{"version": 2, "percent": 5, "startAt": "tomorrow"}"#, "/startAt", "RFC 3339"),
        (#"{"version": 2, "percent": 5, "seed": ""}"#, "/seed", "empty"),
        (#"{"version": 2, "percent": 5, "seed": 7}"#, "/seed", "string"),
        (#"{"version": 2, "percent": 5, "installs": "tester"}"#, "/installs", "array"),
        (#"{"version": 2, "percent": 5, "installs": ["ok", "bad\u0001"]}"#, "/installs/1", "control"),
        (#"{"version": 2, "percent": 5, "environment": "staging"}"#, "/environment", "unknown"),
        (#"[1, 2]"#, "", "object"),
        (#"{"version": 2, "percent": 5"#, "", "not JSON"),
    ])
    func refusesABadPlanAtItsPointer(json: String, pointer: String, why: String) {
        let error = failure { try RolloutPlan.decode(bytes(json), now: now) }
        #expect(error?.status == 422)
        #expect(pointers(error) == [pointer], "\(json): \(String(describing: error))")
        #expect(messages(error).contains(why), "\(json): \(messages(error))")
    }

    @Test func reportsEveryProblemAtOnce() {
        let error = failure {
            try RolloutPlan.decode(
                bytes(#"{"steps": [{"percent": 500, "hold": "PT1M"}, {"percent": 50, "hold": "soon"}], "seed": "", "colour": 1}"#), now: now
            )
        }
        #expect(pointers(error) == ["/colour", "", "/steps/0/percent", "/steps/1/hold", "/seed"])
    }

    @Test func startAtWithinAMinuteInThePastIsNoError() throws {
        let plan = try RolloutPlan.decode(bytes(#"{"version": 2, "percent": 5, "startAt": "2026-11-25T15:59:01Z"}"#), now: now)
        #expect(plan.startAt == time("2026-11-25T15:59:01Z"))
    }

    @Test func installIDsOver128CharactersAreRefused() {
        let long = String(repeating: "x", count: 129)
        let error = failure { try RolloutPlan.decode(bytes(#"{"version": 2, "percent": 5, "installs": ["\#(long)"]}"#), now: now) }
        #expect(pointers(error) == ["/installs/0"])
        #expect(messages(error).contains("128"))
    }

    @Test func aHugeBodyIs413() {
        let body = bytes(#"{"version": 2, "percent": 5, "seed": ""# + String(repeating: "x", count: 300_000) + #""}"#)
        #expect(failure { try RolloutPlan.decode(body, now: now) }?.status == 413)
    }

    @Test func patchTakesAnUpwardPercentOrPause() throws {
        #expect(try RolloutPatch.decode(bytes(#"{"percent": 30}"#)) == RolloutPatch(percent: percent(30)))
        #expect(try RolloutPatch.decode(bytes(#"{"paused": true}"#)) == RolloutPatch(paused: true))
        #expect(pointers(failure { try RolloutPatch.decode(bytes("{}")) }) == [""])
        #expect(pointers(failure { try RolloutPatch.decode(bytes(#"{"paused": "yes"}"#)) }) == ["/paused"])
        #expect(pointers(failure { try RolloutPatch.decode(bytes(#"{"percent": 30, "state": "running"}"#)) }) == ["/state"])
    }

    @Test func rollbackTakesAnOptionalReason() throws {
        #expect(try RollbackRequest.reason(from: []) == nil)
        #expect(try RollbackRequest.reason(from: bytes("{}")) == nil)
        #expect(try RollbackRequest.reason(from: bytes(#"{"reason": "crash rate"}"#)) == "crash rate")
        #expect(pointers(failure { try RollbackRequest.reason(from: bytes(#"{"reason": 5}"#)) }) == ["/reason"])
    }
}
