import Foundation
import Testing

@testable import TabClient

/// Manifest mode's schedule (docs/client.md, "Manifest mode"): step times read as the Java client reads them, the share a
/// step gives at the device clock's time, the prefetched candidate used, dropped and switched to, and the timer of
/// ``TabClient/updates()``. The conformance scenarios `schedule-*` cover the rest, for both clients. Every test runs
/// on a ``ManualClock``: no test waits for a step.
@Suite struct ScheduleTests {
    static let stable = "install-0"  // bucket 9785 in fixed-seed
    static let candidate = "3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77"  // bucket 1095
    static let step = "2026-11-26T21:00:00.000Z"
    static let stepDate = RFC3339.date(step)
    static func jack(_ version: Int) -> CompiledLayout? { try? OlderAnswerTests.jack(version: version).layout }

    static func date(_ text: String) throws -> Date { try #require(RFC3339.date(text)) }

    /// A manifest of jack: stable 1, and a rollout of version 2 with seed fixed-seed, tester `tester-0`.
    static func manifest(_ revision: Int, percent: Double = 50, schedule: String? = nil, rollout: Bool = true) -> Data {
        let steps = schedule ?? #"[{"percent":100,"at":"\#(step)"}]"#
        let running =
            rollout
            ? #"{"id":1,"version":2,"seed":"fixed-seed","percent":\#(percent),"installs":["tester-0"],"schedule":\#(steps)}"# : "null"
        return Data(
            #"{"account":"jack","environment":"production","layout":"jack","revision":\#(revision),"stable":{"version":1},"rollout":\#(running)}"#
                .utf8)
    }

    static func answer(_ body: Data, etag: String) -> RawHTTPResponder.Reply {
        .respond(status: 200, headers: [("Content-Type", "application/json"), ("ETag", etag)], body: body)
    }

    static func layout(_ version: Int) throws -> RawHTTPResponder.Reply {
        let (_, body, etag) = try OlderAnswerTests.jack(version: version)
        return answer(body, etag: etag)
    }

    static func configuration(
        _ server: URL, install: String = stable, cache: URL?, clock: ManualClock, manifest: Bool = true, events: EventLog? = nil
    ) -> TabClientConfiguration {
        var configuration = Fixtures.configuration(server: server, installID: install, cache: cache, onEvent: events?.handler)
        configuration.manifestMode = manifest
        configuration.clock = clock
        return configuration
    }

    // MARK: Step times

    @Test func stepTimesAreReadAsTheJavaClientReadsThem() throws {
        let url = ConformanceTests.directory.appendingPathComponent("rfc3339-vectors.json")
        let vectors = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let valid = try #require(vectors["valid"] as? [[String: Any]])
        let invalid = try #require(vectors["invalid"] as? [[String: Any]])
        #expect(valid.count >= 10 && invalid.count >= 20)
        for vector in valid {
            let text = try #require(vector["text"] as? String)
            let millis = try #require(vector["millis"] as? Int)
            #expect(RFC3339.milliseconds(text) == Int64(millis), "\(text): \(vector["note"] ?? "")")
        }
        for vector in invalid {
            let text = try #require(vector["text"] as? String)
            #expect(RFC3339.milliseconds(text) == nil, "\(text) was read: \(vector["note"] ?? "")")
        }
    }

    @Test func aStepWhoseTimeIsNotAnRFC3339TimeMakesTheManifestInvalid() {
        #expect(throws: TabClientError.invalidManifest("/rollout/schedule/0/at: \"tomorrow\" is not an RFC 3339 time")) {
            try Manifest.decode(Self.manifest(1, schedule: #"[{"percent":100,"at":"tomorrow"}]"#))
        }
        #expect(throws: TabClientError.self) { try Manifest.decode(Self.manifest(1, schedule: #"[{"percent":100}]"#)) }
    }

    // MARK: The share by the device's clock

    @Test func theShareCountsTheStepsWhoseTimeHasComeAndTheFirstComingStepMovesTheInstall() throws {
        // 5 % now; 10 % at 20:00, 15 % at 21:00 and 100 % at 22:00, listed out of order.
        let schedule =
            #"[{"percent":100,"at":"2026-11-26T22:00:00Z"},{"percent":15,"at":"2026-11-26T21:00:00Z"},{"percent":10,"at":"2026-11-26T20:00:00Z"}]"#
        let manifest = try Manifest.decode(Self.manifest(1, percent: 5, schedule: schedule))
        let (before, at20, at21, at22) = try (
            Self.date("2026-11-26T19:00:00Z"), Self.date("2026-11-26T20:00:00Z"), Self.date("2026-11-26T21:00:00Z"),
            Self.date("2026-11-26T22:00:00Z")
        )
        // Bucket 1095: not in at 5 % or 10 %, in from 15 %: the 20:00 step does not move it, the 21:00 one does.
        #expect(manifest.version(for: Self.candidate, at: before) == 1)
        #expect(manifest.version(for: Self.candidate, at: at20) == 1)
        #expect(manifest.move(for: Self.candidate, after: before) == Manifest.Move(version: 2, at: at21, text: "2026-11-26T21:00:00Z"))
        #expect(manifest.version(for: Self.candidate, at: at21) == 2)
        #expect(manifest.move(for: Self.candidate, after: at21) == nil)
        // Bucket 9785: only the last step.
        #expect(manifest.move(for: Self.stable, after: before)?.at == at22)
        #expect(manifest.version(for: Self.stable, at: at21) == 1 && manifest.version(for: Self.stable, at: at22) == 2)
        // A tester has the candidate already; version(for:) alone reads no step.
        #expect(manifest.version(for: "tester-0", at: before) == 2 && manifest.move(for: "tester-0", after: before) == nil)
        #expect(manifest.version(for: Self.candidate) == 1)
        // Paused: no step, no move.
        #expect(try Manifest.decode(Self.manifest(2, schedule: "[]")).move(for: Self.stable, after: before) == nil)
        #expect(try Manifest.decode(Self.manifest(3, rollout: false)).move(for: Self.stable, after: before) == nil)
    }

    @Test func aStepsShareIsInBasisPointsAndTheBucketMustBeBelowIt() throws {
        let at = try Self.date("2026-11-26T21:00:00Z")
        let before = at.addingTimeInterval(-1)
        func moves(_ percent: String) throws -> Bool {
            let manifest = try Manifest.decode(
                Self.manifest(1, percent: 0, schedule: #"[{"percent":\#(percent),"at":"2026-11-26T21:00:00Z"}]"#))
            return manifest.move(for: Self.candidate, after: before) != nil
        }
        #expect(try moves("10.96"))  // 1096 basis points > 1095
        #expect(try !moves("10.95"))  // 1095: not below
    }

    // MARK: The prefetched candidate

    @Test func aManifestThatGivesTheCandidateNowUsesThePrefetchedCopyWithNoRequest() async throws {
        let replies = [
            Self.answer(Self.manifest(1), etag: "\"m1\""), try Self.layout(1), try Self.layout(2),
            Self.answer(Self.manifest(2, percent: 100, schedule: "[]"), etag: "\"m2\""),
        ]
        let responder = try RawHTTPResponder { replies[min($0, replies.count - 1)] }
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let clock = try ManualClock("2026-11-26T20:00:00Z")
        let client = try TabClient(
            configuration: Self.configuration(responder.url, cache: cache, clock: clock), bundle: try Fixtures.jackBundle())
        let v1 = try #require(Self.jack(1))
        #expect(try await client.refresh() == .updated(v1))
        #expect(client.nextSwitch == Self.stepDate)
        // The share raised to 100 % at once: the candidate is the one kept, not asked for again.
        #expect(try await client.refresh() == .updated(try #require(Self.jack(2))))
        #expect(responder.requests.count == 4)
        #expect(client.nextSwitch == nil && client.validators == ["\"v2\""])
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["jack.tabs.json"])
    }

    /// A client that prefetched v2 for 21:00 at 20:00, and the responder's later replies.
    static func prefetched(then later: [RawHTTPResponder.Reply], events: EventLog? = nil) async throws -> (
        TabClient, RawHTTPResponder, ManualClock, URL
    ) {
        let replies = [Self.answer(Self.manifest(1), etag: "\"m1\""), try Self.layout(1), try Self.layout(2)] + later
        let responder = try RawHTTPResponder { replies[min($0, replies.count - 1)] }
        let cache = try Fixtures.temporaryDirectory()
        let clock = try ManualClock("2026-11-26T20:00:00Z")
        let client = try TabClient(
            configuration: Self.configuration(responder.url, cache: cache, clock: clock, events: events), bundle: try Fixtures.jackBundle())
        try await client.refresh()
        #expect(client.nextSwitch == Self.stepDate)
        return (client, responder, clock, cache)
    }

    @Test func aRefreshAfterTheStepSwitchesFirstEvenWhenItsRequestFails() async throws {
        let events = EventLog()
        let (client, responder, clock, cache) = try await Self.prefetched(then: [.drop], events: events)
        defer { try? FileManager.default.removeItem(at: cache) }
        clock.set(try #require(Self.stepDate))
        await #expect(throws: TabClientError.self) { try await client.refresh() }
        #expect(client.current == Self.jack(2) && client.nextSwitch == nil)
        let kinds = events.all.map(ScenarioRun.name(of:))
        let updated = try #require(kinds.lastIndex(of: "updated"))
        let failed = try #require(kinds.lastIndex(of: "failed"))
        #expect(updated < failed, "\(kinds)")
        #expect(responder.requests.count >= 4)
    }

    @Test func aRefreshAfterTheStepWhoseManifestIsUnchangedReportsTheSwitch() async throws {
        let (client, responder, clock, cache) = try await Self.prefetched(then: [.respond(status: 304, headers: [("ETag", "\"m1\"")])])
        defer { try? FileManager.default.removeItem(at: cache) }
        clock.set(try Self.date("2026-11-26T21:00:01Z"))
        #expect(try await client.refresh() == .updated(try #require(Self.jack(2))))
        #expect(responder.requests.count == 4)
        // And the next 304 finds the candidate chosen by the step that has come: nothing more, no way back.
        #expect(try await client.refresh() == .notModified)
        #expect(client.current.version == 2 && responder.requests.count == 5)
    }

    @Test func cancellingUpdatesWhileASwitchIsScheduledEndsThePollAndTheTimer() async throws {
        let (client, responder, clock, cache) = try await Self.prefetched(then: [.hold])
        defer { try? FileManager.default.removeItem(at: cache) }
        let following = Task { for await _ in client.updates() {} }
        #expect(await Fixtures.eventually(within: .seconds(10)) { responder.requests.count == 4 && clock.sleeping == 1 })
        following.cancel()
        let ended = Locked(false)
        Task {
            await following.value
            ended.withLock { $0 = true }
        }
        #expect(
            await Fixtures.eventually(within: .seconds(5)) {
                ended.withLock { $0 } && clock.sleeping == 0 && !responder.heldClosedAt.isEmpty
            })
        #expect(client.current.version == 1 && client.nextSwitch != nil)
    }

    // MARK: The prefetch file at launch

    static func files(mainRevision: Int?, prefetchRevision: Int, prefetchETag: String = "\"v2\"") throws -> URL {
        let cache = try Fixtures.temporaryDirectory()
        let (_, v1, _) = try OlderAnswerTests.jack(version: 1)
        let (_, v2, _) = try OlderAnswerTests.jack(version: 2)
        try LayoutCache(directory: cache, account: "jack").store(body: v1, etag: "\"v1\"", revision: mainRevision)
        try LayoutCache(directory: cache, account: "jack", prefetch: true).storePrefetched(
            body: String(decoding: v2, as: UTF8.self), etag: prefetchETag, at: step, revision: prefetchRevision, signature: nil)
        return cache
    }

    @Test func aPrefetchFileIsKeptAtLaunchUntilItsStep() throws {
        let cache = try Self.files(mainRevision: 5, prefetchRevision: 5)
        defer { try? FileManager.default.removeItem(at: cache) }
        let refusing = try RefusingPort()
        let client = try TabClient(
            configuration: Self.configuration(refusing.url, cache: cache, clock: try ManualClock("2026-11-26T20:00:00Z")),
            bundle: try Fixtures.jackBundle())
        #expect(client.current.version == 1 && client.nextSwitch == Self.stepDate)
        withExtendedLifetime(refusing) {}
    }

    @Test func aPrefetchFileOfAnOlderManifestThanTheLayoutsIsDroppedAtLaunch() throws {
        let cache = try Self.files(mainRevision: 6, prefetchRevision: 5)
        defer { try? FileManager.default.removeItem(at: cache) }
        let refusing = try RefusingPort()
        let client = try TabClient(
            configuration: Self.configuration(refusing.url, cache: cache, clock: try ManualClock("2026-11-26T22:00:00Z")),
            bundle: try Fixtures.jackBundle())
        #expect(client.current.version == 1 && client.nextSwitch == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["jack.tabs.json"])
        withExtendedLifetime(refusing) {}
    }

    @Test func aPrefetchFileHoldingTheLayoutStoredIsDroppedAtLaunch() throws {
        // A crash between storing the switched candidate and removing its prefetch file.
        let cache = try Self.files(mainRevision: 5, prefetchRevision: 5, prefetchETag: "\"v1\"")
        defer { try? FileManager.default.removeItem(at: cache) }
        let client = try TabClient(
            configuration: Self.configuration(
                URL(string: "http://127.0.0.1:9")!, cache: cache, clock: try ManualClock("2026-11-26T20:00:00Z")),
            bundle: try Fixtures.jackBundle())
        #expect(client.nextSwitch == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["jack.tabs.json"])
    }

    @Test func withoutManifestModeAPrefetchFileIsRemovedAndNothingSwitches() throws {
        let cache = try Self.files(mainRevision: 5, prefetchRevision: 5)
        defer { try? FileManager.default.removeItem(at: cache) }
        let client = try TabClient(
            configuration: Self.configuration(
                URL(string: "http://127.0.0.1:9")!, cache: cache, clock: try ManualClock("2026-11-26T22:00:00Z"), manifest: false),
            bundle: try Fixtures.jackBundle())
        #expect(client.current.version == 1 && client.nextSwitch == nil && client.switchIfDue() == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["jack.tabs.json"])
    }

    // MARK: The system's clock

    @Test func theSystemClockWaitsForATimeAndStopsWhenCancelled() async throws {
        let clock = SystemDeviceClock()
        var started = ContinuousClock.now
        try await clock.sleep(until: Date().addingTimeInterval(-60))
        #expect(ContinuousClock.now - started < .milliseconds(100))
        started = ContinuousClock.now
        try await clock.sleep(until: Date().addingTimeInterval(0.2))
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(190) && waited < .seconds(5), "\(waited)")
        let sleeping = Task { try await clock.sleep(until: Date().addingTimeInterval(3600)) }
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
    }
}
