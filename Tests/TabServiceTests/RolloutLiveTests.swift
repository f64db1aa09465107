import Foundation
import TabDelivery
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// Drafts and rollouts over a real socket: each install gets the arm the published bucket gives it, with its own
/// strong ETag, 304s per arm and `Vary: X-Install-Id`; writes wait for the rollout; the ends move everyone; a step
/// wakes the long-polls of the installs it moves and no other; Alertmanager's firing alert rolls back.
@Suite struct RolloutLiveTests {
    static let json = [("Content-Type", "application/json")]

    /// A live service whose account `roll` serves version 1 and holds version 2 as a draft; returns the served ETag.
    static func staged(_ harness: ServiceHarness, account: String = "roll") async throws -> String {
        let client = harness.client()
        let first = try await client.send(
            "PUT", "/v1/accounts/\(account)/layout", headers: ServiceHarness.admin(json + [("If-None-Match", "*")]), body: document(["One"])
        )
        #expect(first.status == 201)
        let etag = try #require(first.header("ETag"))
        let draft = try await client.send(
            "PUT", "/v1/accounts/\(account)/layout?publish=false", headers: ServiceHarness.admin(json + [("If-Match", etag)]),
            body: document(["One", "Two"]))
        #expect(draft.status == 200 && draft.json?["version"] as? Int == 2, "\(draft.status) \(draft.text)")
        let served = try await client.send("GET", "/v1/accounts/\(account)/tabs")
        #expect(served.json?["version"] as? Int == 1, "a draft is not served")
        return etag
    }

    static func startRollout(_ harness: ServiceHarness, _ body: String, etag: String, account: String = "roll") async throws
        -> HTTPTestClient.Response
    {
        try await harness.client().send(
            "POST", "/v1/accounts/\(account)/layout/rollout", headers: ServiceHarness.admin(json + [("If-Match", etag)]),
            body: Array(body.utf8))
    }

    @Test func eachInstallGetsTheArmOfThePublishedBucketWithItsOwnTag() async throws {
        let harness = try await ServiceHarness()
        let etag = try await Self.staged(harness)
        let started = try await Self.startRollout(harness, #"{"version": 2, "percent": 50, "seed": "fixed"}"#, etag: etag)
        #expect(started.status == 201, "\(started.text)")
        #expect(started.json?["state"] as? String == "running" && started.json?["stableVersion"] as? Int == 1)
        let client = harness.client()
        var tags: [Int: Set<String>] = [:]
        for n in 0..<40 {
            let install = "install-\(n)"
            let answer = try await client.send("GET", "/v1/accounts/roll/tabs", headers: [("X-Install-Id", install)])
            let expected = Bucket.of(installID: install, seed: "fixed") < 5000 ? 2 : 1
            #expect(answer.json?["version"] as? Int == expected, "\(install)")
            #expect(answer.header("Vary")?.contains("X-Install-Id") == true)
            let tag = try #require(answer.header("ETag"))
            tags[expected, default: []].insert(tag)
            let again = try await client.send(
                "GET", "/v1/accounts/roll/tabs", headers: [("X-Install-Id", install), ("If-None-Match", tag)])
            #expect(again.status == 304 && again.header("ETag") == tag)
        }
        #expect(tags[1]?.count == 1 && tags[2]?.count == 1 && tags[1] != tags[2], "one strong ETag per arm")
        let anonymous = try await client.send("GET", "/v1/accounts/roll/tabs")
        #expect(anonymous.json?["version"] as? Int == 1, "no install id: the stable version")
        let byQuery = try await client.send("GET", "/v1/accounts/roll/tabs?installId=install-0")
        #expect(byQuery.json?["version"] as? Int == (Bucket.of(installID: "install-0", seed: "fixed") < 5000 ? 2 : 1))
        let tooLong = try await client.send(
            "GET", "/v1/accounts/roll/tabs", headers: [("X-Install-Id", String(repeating: "x", count: 129))])
        #expect(tooLong.status == 400 && tooLong.header("Content-Type") == "application/problem+json")
        let other = try await client.send("GET", "/v1/accounts/jack/tabs")
        #expect(other.header("Vary")?.contains("X-Install-Id") == false, "accounts without a rollout do not vary on the install")
        let bundle = try await client.send("GET", "/v1/accounts/roll/tabs/bundle?locale=en", headers: [("X-Install-Id", "install-1")])
        #expect(bundle.text.contains("\"version\":1"), "the bundle is the stable version")
    }

    @Test func writesWaitForTheRolloutAndCompletionMovesEveryone() async throws {
        let harness = try await ServiceHarness()
        let etag = try await Self.staged(harness)
        let before = harness.service.snapshot.sequence
        #expect(try await Self.startRollout(harness, #"{"version": 2, "percent": 25}"#, etag: etag).status == 201)
        let client = harness.client()
        let write = try await client.send(
            "PUT", "/v1/accounts/roll/layout", headers: ServiceHarness.admin(Self.json + [("If-Match", etag)]), body: document(["X"]))
        #expect(write.status == 409 && write.text.contains("rollout-conflict"), "\(write.text)")
        let draft = try await client.send(
            "PUT", "/v1/accounts/roll/layout?publish=false", headers: ServiceHarness.admin(Self.json + [("If-Match", etag)]),
            body: document(["X"]))
        #expect(draft.status == 200, "drafts are fine during a rollout")
        let second = try await Self.startRollout(harness, #"{"version": 2, "percent": 30}"#, etag: etag)
        #expect(second.status == 409)
        let lower = try await client.send(
            "PATCH", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin(Self.json), body: Array(#"{"percent": 10}"#.utf8))
        #expect(lower.status == 409, "the percent only grows")
        let raised = try await client.send(
            "PATCH", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin(Self.json), body: Array(#"{"percent": 80}"#.utf8))
        #expect(raised.status == 200 && raised.json?["percent"] as? Double == 80)
        let notANumber = try await client.send(
            "PATCH", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin(Self.json), body: Array(#"{"percent": "x"}"#.utf8))
        #expect(notANumber.status == 422 && notANumber.text.contains("/percent"), "\(notANumber.text)")
        let completed = try await client.send("POST", "/v1/accounts/roll/layout/rollout/complete", headers: ServiceHarness.admin())
        #expect(completed.status == 200 && completed.json?["state"] as? String == "completed", "\(completed.text)")
        let everyone = try await client.send("GET", "/v1/accounts/roll/tabs", headers: [("X-Install-Id", "anyone")])
        #expect(everyone.json?["version"] as? Int == 2 && everyone.header("Vary")?.contains("X-Install-Id") == false)
        let read = try await client.send("GET", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin())
        #expect(read.json?["state"] as? String == "completed")
        let late = try await client.send("POST", "/v1/accounts/roll/layout/rollout/rollback", headers: ServiceHarness.admin())
        #expect(late.status == 409)
        let versions = try await client.send("GET", "/v1/accounts/roll/layout/versions", headers: ServiceHarness.admin())
        let listed = (versions.json?["versions"] as? [[String: Any]]) ?? []
        #expect(listed.first { $0["version"] as? Int == 2 }?["environments"] as? [String] == ["production"])
        #expect(listed.first { $0["version"] as? Int == 3 }?["environments"] as? [String] == [], "the draft: no environment")
        let feed = harness.service.publisher.feed.events(after: before, current: harness.service.snapshot.sequence)
        guard case .events(let events) = feed else {
            Issue.record("the feed was reset")
            return
        }
        #expect(events.filter { $0.kind == .rollout }.count == 3, "start, raise and completion")
        #expect(events.contains { $0.kind == .layout && $0.version == 2 }, "the completion published version 2")
        let stream = events.map(ManagementRoutes.serverSentEvent).joined()
        #expect(stream.contains("event: rollout\n") && stream.contains("\"state\":\"completed\""), "\(stream)")
    }

    @Test func badPlansAreRefusedAtTheirPointer() async throws {
        let harness = try await ServiceHarness()
        let etag = try await Self.staged(harness)
        let cases: [(String, Int, String)] = [
            (#"{"version": 9, "percent": 5}"#, 422, "/version"),
            (#"{"version": 2, "percent": 101}"#, 422, "/percent"),
            (#"{"version": 2, "steps": []}"#, 422, "/steps"),
            (#"{"version": 2, "steps": [{"percent": 50, "hold": "PT1M"}, {"percent": 10, "hold": "PT1M"}]}"#, 422, "/steps/1/percent"),
            (#"{"version": 2, "steps": [{"percent": 50, "hold": "P31D"}]}"#, 422, "/steps/0/hold"),
            (#"{"version": 2, "steps": [{"percent": 50, "hold": "ten minutes"}]}"#, 422, "/steps/0/hold"),
            (#"{"version": 2, "percent": 5, "startAt": "2001-01-01T00:00:00Z"}"#, 422, "/startAt"),
        ]
        for (body, status, pointer) in cases {
            let answer = try await Self.startRollout(harness, body, etag: etag)
            #expect(answer.status == status && answer.text.contains(pointer), "\(body): \(answer.status) \(answer.text)")
        }
        let stale = try await Self.startRollout(harness, #"{"version": 2, "percent": 5}"#, etag: "\"stale\"")
        #expect(stale.status == 412)
        let none = try await harness.client().send(
            "POST", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin(Self.json),
            body: Array(#"{"version": 2, "percent": 5}"#.utf8))
        #expect(none.status == 428)
        let unknown = try await harness.client().send(
            "GET", "/v1/accounts/roll/layout/rollout?environment=staging", headers: ServiceHarness.admin())
        #expect(unknown.status == 404)
        let nothing = try await harness.client().send("GET", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin())
        #expect(nothing.status == 404, "no rollout yet")
    }

    @Test func aStepWakesTheLongPollsOfTheInstallsItMovesAndNoOther() async throws {
        let harness = try await ServiceHarness()
        let etag = try await Self.staged(harness)
        // 10 % for one second, then everyone: installs with a bucket of 1000 or more move at the step.
        let ids = (0..<200).map { "poll-\($0)" }
        let moving = try #require(ids.first { Bucket.of(installID: $0, seed: "s") >= 1000 })
        let staying = try #require(ids.first { Bucket.of(installID: $0, seed: "s") < 1000 })
        let started = try await Self.startRollout(
            harness, #"{"version": 2, "seed": "s", "steps": [{"percent": 10, "hold": "PT1S"}, {"percent": 100, "hold": "PT1H"}]}"#,
            etag: etag)
        #expect(started.status == 201)
        func current(_ install: String) async throws -> String {
            try #require(
                try await harness.client().send("GET", "/v1/accounts/roll/tabs", headers: [("X-Install-Id", install)]).header("ETag"))
        }
        let (movingTag, stayingTag) = (try await current(moving), try await current(staying))
        let clock = ContinuousClock()
        let began = clock.now
        async let movedAnswer = harness.client().send(
            "GET", "/v1/accounts/roll/tabs?wait=6", headers: [("X-Install-Id", moving), ("If-None-Match", movingTag)])
        async let stayedAnswer = harness.client().send(
            "GET", "/v1/accounts/roll/tabs?wait=4", headers: [("X-Install-Id", staying), ("If-None-Match", stayingTag)])
        let moved = try await movedAnswer
        let movedAfter = clock.now - began
        #expect(moved.status == 200 && moved.json?["version"] as? Int == 2, "the step moved it: \(moved.status)")
        #expect(movedAfter < .seconds(3), "woken by the step at about 1 s, not by its wait (\(movedAfter))")
        let stayed = try await stayedAnswer
        #expect(stayed.status == 304 && clock.now - began >= .seconds(3.5), "it had the candidate already: held to its wait")
        let rollout = try await harness.client().send("GET", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin())
        #expect(rollout.json?["step"] as? Int == 1 && rollout.json?["percent"] as? Double == 100, "\(rollout.text)")
        let served = rollout.json?["served"] as? [String: Int]
        #expect((served?["candidate"] ?? 0) >= 2 && (served?["stable"] ?? 0) >= 1, "\(rollout.text)")
    }

    @Test func aFiringAlertmanagerAlertRollsBackTheRolloutItNames() async throws {
        let harness = try await ServiceHarness()
        let etag = try await Self.staged(harness)
        #expect(try await Self.startRollout(harness, #"{"version": 2, "percent": 100}"#, etag: etag).status == 201)
        let client = harness.client()
        func alert(_ status: String, account: String) -> [UInt8] {
            Array(
                """
                {"receiver": "tabserver", "status": "\(status)", "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0,
                 "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "http://am:9093",
                 "alerts": [{"status": "\(status)", "labels": {"alertname": "CrashRate", "account": "\(account)"},
                   "annotations": {"summary": "crashes doubled"}, "startsAt": "2026-11-25T10:00:00Z",
                   "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "", "fingerprint": "abc"}]}
                """.utf8)
        }
        let resolved = try await client.send(
            "POST", "/v1/alerts", headers: ServiceHarness.admin(Self.json), body: alert("resolved", account: "roll"))
        #expect(resolved.status == 200 && resolved.text.contains("\"rolledBack\":[]"), "\(resolved.text)")
        let elsewhere = try await client.send(
            "POST", "/v1/alerts", headers: ServiceHarness.admin(Self.json), body: alert("firing", account: "jack"))
        #expect(elsewhere.text.contains("\"rolledBack\":[]"))
        let firing = try await client.send(
            "POST", "/v1/alerts", headers: ServiceHarness.admin(Self.json), body: alert("firing", account: "roll"))
        #expect(firing.status == 200 && firing.text.contains("\"account\":\"roll\""), "\(firing.text)")
        let everyone = try await client.send("GET", "/v1/accounts/roll/tabs", headers: [("X-Install-Id", "anyone")])
        #expect(everyone.json?["version"] as? Int == 1)
        let rollout = try await client.send("GET", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin())
        #expect(rollout.json?["state"] as? String == "rolledBack" && rollout.json?["reason"] as? String == "CrashRate: crashes doubled")
        let notAlertmanager = try await client.send(
            "POST", "/v1/alerts", headers: ServiceHarness.admin(Self.json), body: Array(#"{"version": "3", "alerts": []}"#.utf8))
        #expect(notAlertmanager.status == 422 && notAlertmanager.text.contains("/version"))
    }

    @Test func eachAnswerIsCountedOnceInItsArm() async throws {
        let harness = try await ServiceHarness()
        let etag = try await Self.staged(harness)
        #expect(try await Self.startRollout(harness, #"{"version": 2, "percent": 50, "seed": "count"}"#, etag: etag).status == 201)
        let client = harness.client()
        var expected = (candidate: 0, stable: 0)
        for n in 0..<12 {
            let install = "counted-\(n)"
            // A locale no one asked for yet: the variant is built off libmicrohttpd's threads and the request answered
            // when it is done (answered once, counted once).
            let locale = ["en", "fr", "de-AT"][n % 3]
            let answer = try await client.send(
                "GET", "/v1/accounts/roll/tabs", headers: [("X-Install-Id", install), ("Accept-Language", locale)])
            #expect(answer.status == 200)
            if Bucket.of(installID: install, seed: "count") < 5000 { expected.candidate += 1 } else { expected.stable += 1 }
        }
        let rollout = try await client.send("GET", "/v1/accounts/roll/layout/rollout", headers: ServiceHarness.admin())
        let served = rollout.json?["served"] as? [String: Int]
        #expect(served?["candidate"] == expected.candidate && served?["stable"] == expected.stable, "\(rollout.text)")
    }
}
