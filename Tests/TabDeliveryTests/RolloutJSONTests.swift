import Testing

@testable import TabDelivery

/// The JSON the rollout routes answer and the change feed carries, byte for byte.
@Suite struct RolloutJSONTests {
    let t0 = time("2026-11-25T16:00:00Z")

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func theRolloutDocumentHasTheFieldsOfTheContract() throws {
        let rollout = try RolloutFixture.running(at: t0)
        let document = rollout.document(at: t0.adding(milliseconds: 11 * 60_000), served: ServedCounts(candidate: 12, stable: 230))
        #expect(
            text(document.json)
                == #"{"environment":"production","id":1,"nextStepAt":"2026-11-25T16:40:00.000Z","percent":25,"seed":"jack:production:1","#
                + #""served":{"candidate":12,"stable":230},"stableVersion":3,"startedAt":"2026-11-25T16:00:00.000Z","state":"running","step":1,"#
                + #""steps":[{"hold":"PT10M","percent":5},{"hold":"PT30M","percent":25},{"hold":"PT1H","percent":100}],"version":5}"#)
    }

    @Test func aFixedRolloutHasNoStepsAndARolledBackOneItsReason() throws {
        let rollout = try RolloutFixture.start(#"{"version": 5, "percent": 0.5, "seed": "s"}"#, at: t0).rollout
        let running = text(rollout.document(at: t0, served: ServedCounts(candidate: 0, stable: 0)).json)
        #expect(running.contains(#""percent":0.5,"#))
        #expect(running.contains(#""step":null,"steps":[]"#))
        #expect(running.contains(#""nextStepAt":null"#))
        let back = try rollout.rolledBack(reason: "too slow", at: t0).rollout
        let ended = text(back.document(at: t0, served: ServedCounts(candidate: 0, stable: 0)).json)
        #expect(ended.contains(#""percent":0,"reason":"too slow","#))
        #expect(ended.contains(#""state":"rolledBack""#))
    }

    @Test func rolloutEventsCarryTheirTransition() throws {
        let change = try RolloutFixture.running(at: t0).advanced(to: t0.adding(milliseconds: 3_600_000))
        let events = change.transitions.map { text(change.rollout.event(for: $0, author: "clock").json) }
        #expect(
            events == [
                #"{"account":"jack","at":"2026-11-25T16:10:00.000Z","author":"clock","environment":"production","percent":25,"rollout":1,"state":"running","version":5}"#,
                #"{"account":"jack","at":"2026-11-25T16:40:00.000Z","author":"clock","environment":"production","percent":100,"rollout":1,"state":"running","version":5}"#,
            ])
    }

    @Test func theStoredRecordReadsBackTheSameRolloutInEveryState() throws {
        let minute: Int64 = 60_000
        let running = try RolloutFixture.running(at: t0)
        let fixed = try RolloutFixture.start(
            #"{"version": 6, "percent": 12.5, "seed": "s", "installs": ["qa-1", "qa-2"], "startAt": "2026-11-25T18:00:00Z"}"#, at: t0
        ).rollout
        let states = [
            running, running.advanced(to: t0.adding(milliseconds: 15 * minute)).rollout,
            try running.patched(RolloutPatch(percent: percent(40), paused: true), at: t0.adding(milliseconds: 3 * minute)).rollout,
            try running.completed(at: t0.adding(milliseconds: minute)).rollout,
            try running.rolledBack(reason: "TabCrashRate: crash rate above 2%", at: t0.adding(milliseconds: minute)).rollout,
            try running.rolledBack(reason: nil, at: t0).rollout, fixed,
        ]
        for rollout in states {
            #expect(Rollout(record: rollout.record) == rollout)
        }
        #expect(Rollout(record: bytes("{}")) == nil)
        #expect(Rollout(record: bytes(text(running.record).replacingOccurrences(of: "\"PT10M\"", with: "\"10m\""))) == nil)
    }

    @Test func everyTransitionHasAHistoryMessage() throws {
        let rollout = try RolloutFixture.running(at: t0)
        let change = try rollout.rolledBack(reason: "too many crashes", at: t0.adding(milliseconds: 11 * 60_000))
        #expect(
            change.transitions.map { change.rollout.message(for: $0) } == [
                "rollout 1 of version 5: step 2, 25%", "rollout 1 of version 5: rolled back to version 3: too many crashes",
            ])
        let started = try RolloutFixture.start(RolloutFixture.steps, at: t0)
        #expect(started.rollout.message(for: started.transitions[0]) == "rollout 1 of version 5: started, step 1, 5%")
    }
}
