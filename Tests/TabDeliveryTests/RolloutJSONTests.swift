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
}
