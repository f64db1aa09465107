import Testing

@testable import TabDelivery

/// The JSON the rollout routes answer and the change feed carries, byte for byte.
@Suite struct RolloutJSONTests {
    let t0 = time("2026-11-25T16:00:00Z")

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func theRolloutDocumentHasTheFieldsOfTheContract() throws {
        let started = try RolloutFixture.start(RolloutFixture.steps, at: t0).recorded(by: "deployer")
        let rollout = started.rollout.advanced(to: t0.adding(milliseconds: 11 * 60_000)).recorded(by: "tabserver").rollout
        let document = rollout.document(at: t0.adding(milliseconds: 11 * 60_000), served: ServedCounts(candidate: 12, stable: 230))
        #expect(
            text(document.json)
                == #"{"environment":"production","guard":null,"history":["#
                + #"{"at":"2026-11-25T16:00:00.000Z","author":"deployer","change":"started","message":"rollout 1 of version 5: started, step 1, 5%","percent":5,"state":"running","step":0},"#
                + #"{"at":"2026-11-25T16:10:00.000Z","author":"tabserver","change":"stepped","message":"rollout 1 of version 5: step 2, 25%","percent":25,"state":"running","step":1}"#
                + #"],"id":1,"nextStepAt":"2026-11-25T16:40:00.000Z","percent":25,"seed":"jack:production:1","#
                + #""served":{"candidate":12,"stable":230},"stableVersion":3,"startedAt":"2026-11-25T16:00:00.000Z","state":"running","step":1,"#
                + #""steps":[{"hold":"PT10M","percent":5},{"hold":"PT30M","percent":25},{"hold":"PT1H","percent":100}],"version":5}"#)
    }

    @Test func eachRecordedChangeAddsItsTransitionsToTheHistoryAtItsRevision() throws {
        let started = try RolloutFixture.start(RolloutFixture.steps, at: t0).recorded(by: "deployer").rollout
        #expect(started.history.map(\.revision) == [1] && started.history(at: 1).map(\.author) == ["deployer"])
        // One PATCH records a raise and a pause at once: one revision, two lines.
        let patched = try started.patched(RolloutPatch(percent: percent(40), paused: true), at: t0.adding(milliseconds: 60_000))
            .recorded(by: "ops").rollout
        #expect(patched.history(at: patched.revision).map(\.transition.kind) == [.raised, .paused])
        #expect(patched.history.count == 3 && patched.history(at: 1).count == 1)
        // A change with nothing to record adds nothing.
        let idle = started.advanced(to: t0).recorded(by: "tabserver").rollout
        #expect(idle.history == started.history)
        let back = try patched.rolledBack(reason: "TabCrashRate: crash rate above 2%", at: t0.adding(milliseconds: 120_000))
            .recorded(by: "alertmanager").rollout
        let line = try #require(back.history.last)
        #expect(
            line.transition.kind == .rolledBack && line.author == "alertmanager" && line.transition.reason?.hasPrefix("TabCrash") == true)
        #expect(
            text(back.document(at: t0, served: ServedCounts(candidate: 0, stable: 0)).json).contains(
                #""message":"rollout 1 of version 5: rolled back to version 3: TabCrashRate: crash rate above 2%","percent":0,"reason":"TabCrashRate: crash rate above 2%","state":"rolledBack""#
            ))
    }

    @Test func theHistoryKeepsItsNewestLinesUpToItsLimit() throws {
        var rollout = try RolloutFixture.start(#"{"version": 5, "percent": 1, "seed": "s"}"#, at: t0).recorded(by: "a").rollout
        for minute in 1...Rollout.historyLimit {
            let at = t0.adding(milliseconds: Int64(minute) * 60_000)
            rollout = try rollout.patched(RolloutPatch(paused: minute % 2 == 1), at: at).recorded(by: "ops-\(minute)").rollout
        }
        #expect(rollout.history.count == Rollout.historyLimit)
        #expect(rollout.history.first?.author == "ops-1" && rollout.history.last?.author == "ops-\(Rollout.historyLimit)")
        #expect(Rollout(record: rollout.record) == rollout)
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
        let recorded = try running.patched(RolloutPatch(percent: percent(40)), at: t0.adding(milliseconds: minute)).recorded(by: "ops")
            .rollout
        #expect(Rollout(record: recorded.record) == recorded && recorded.history.count == 1)
        #expect(Rollout(record: bytes("{}")) == nil)
        #expect(Rollout(record: bytes(text(running.record).replacingOccurrences(of: "\"PT10M\"", with: "\"10m\""))) == nil)
    }

    @Test func aRecordFromBeforeTheHistoryReadsWithAnEmptyOneAndAnUnknownLineIsLeftOut() throws {
        let started = try RolloutFixture.start(RolloutFixture.steps, at: t0).recorded(by: "deployer").rollout
        var withoutHistory = started
        withoutHistory.history = []
        // The previous release's record: the same fields, no "history" key.
        let old = text(withoutHistory.record).replacingOccurrences(of: #","history":[]"#, with: "")
        #expect(!old.contains("history"))
        #expect(Rollout(record: bytes(old)) == withoutHistory)
        // A line of a kind a newer release knows: the rollout reads, without that line.
        let newer = text(started.record).replacingOccurrences(of: #""kind":"started""#, with: #""kind":"split""#)
        #expect(newer != text(started.record))
        #expect(Rollout(record: bytes(newer))?.history == [])
    }

    @Test func theStoredRecordKeepsItsBytes() throws {
        // Stores hold these bytes: a release must read the previous one's and write the same for the same rollout.
        let started = try RolloutFixture.start(RolloutFixture.steps, at: t0).recorded(by: "deployer").rollout
        let back = try started.rolledBack(reason: "crashes", at: t0.adding(milliseconds: 60_000)).recorded(by: "ops").rollout
        let stored =
            #"{"account":"jack","candidateVersion":5,"createdAt":1795622400000,"environment":"production","floorBasisPoints":0,"format":1,"#
            + #""history":[{"at":1795622400000,"author":"deployer","basisPoints":500,"kind":"started","revision":1,"state":"running","step":0},"#
            + #"{"at":1795622460000,"author":"ops","basisPoints":0,"kind":"rolledBack","reason":"crashes","revision":2,"state":"rolledBack"}],"#
            + #""id":1,"reason":"crashes","revision":2,"rolledBackAt":1795622460000,"seed":"jack:production:1","stableVersion":3,"#
            + #""startAt":1795622400000,"started":true,"step":0,"stepBegan":1795622400000,"#
            + #""steps":[{"basisPoints":500,"hold":"PT10M"},{"basisPoints":2500,"hold":"PT30M"},{"basisPoints":10000,"hold":"PT1H"}],"#
            + #""testers":[]}"#
        #expect(text(back.record) == stored)
        #expect(Rollout(record: bytes(stored)) == back)
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
