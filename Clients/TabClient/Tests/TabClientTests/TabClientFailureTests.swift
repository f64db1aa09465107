import Foundation
import Testing

@testable import TabClient

/// What the client sends, and what it does with answers a correct server never gives: against a scripted
/// responder on a real socket.
@Suite struct TabClientFailureTests {
    static let json = [("Content-Type", "application/json")]

    /// A valid layout unlike the fixture bundle's, and its body.
    static func serverLayout(title: String) throws -> (CompiledLayout, Data) {
        var layout = try Fixtures.jackBundle().representations[0].layout
        layout.tabs[0].title = title
        layout.version = (layout.version ?? 0) + 1
        let body = try JSONEncoder().encode(layout)
        return (layout, body)
    }

    @Test func firstLaunchOfflineShowsTheBundledLayout() async throws {
        let bundle = try Fixtures.jackBundle()
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let refusing = try RefusingPort()
        let client = try TabClient(configuration: Fixtures.configuration(server: refusing.url, cache: cache), bundle: bundle)
        #expect(client.current == bundle.representations[0].layout)
        #expect(client.source == .bundle)
        await #expect(throws: TabClientError.self) { try await client.refresh() }
        #expect(client.current == bundle.representations[0].layout)
        #expect(client.current.tabs[0].title == "Bundled home")
        withExtendedLifetime(refusing) {}
    }

    @Test func sendsItsValidatorsLanguagesPlatformAndVersion() async throws {
        let responder = try RawHTTPResponder { _ in .respond(status: 304, headers: []) }
        var configuration = Fixtures.configuration(server: responder.url, languages: ["fr-CA", "en"])
        configuration.platform = "iphone"
        configuration.appVersion = "4.2"
        let bundle = try Fixtures.jackBundle()
        let client = try TabClient(configuration: configuration, bundle: bundle)
        #expect(try await client.refresh() == .notModified)
        let request = try #require(responder.requests.first)
        #expect(request.target == "/v1/accounts/jack/tabs")
        #expect(request.header("If-None-Match") == bundle.representations[0].validators.joined(separator: ", "))
        #expect(request.header("Accept-Language") == "fr-CA, en;q=0.9")
        #expect(request.header("X-Client-Platform") == "iphone")
        #expect(request.header("X-App-Version") == "4.2")
        #expect(request.header("Accept") == "application/json")
    }

    @Test func theDefaultConfigurationSendsTheSystemsPlatformAndTheAppsVersion() async throws {
        let responder = try RawHTTPResponder { _ in .respond(status: 304, headers: []) }
        // Only what an app must give: the platform and the version are the defaults.
        let configuration = TabClientConfiguration(server: responder.url, account: "jack", cacheDirectory: nil)
        #expect(configuration.platform == TabClientConfiguration.defaultPlatform)
        #expect(configuration.appVersion == TabClientConfiguration.mainBundleVersion)
        let client = try TabClient(configuration: configuration, bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .notModified)
        let request = try #require(responder.requests.first)
        #expect(request.header("X-Client-Platform") == TabClientConfiguration.defaultPlatform)
        #expect(request.header("X-App-Version") == TabClientConfiguration.mainBundleVersion)
        #if os(Linux)
            // No platform of the server's is Linux's: none is sent, rather than a name the server refuses with 400.
            #expect(request.header("X-Client-Platform") == nil)
        #else
            #expect(request.header("X-Client-Platform") != nil)
        #endif
    }

    @Test(arguments: [
        ("iPhone15,2", "iphone"), ("iPhone17,1", "iphone"), ("iPod9,1", "iphone"), ("iPad13,1", "ipad"), ("iPad16,6", "ipad"),
        ("MacBookPro18,3", nil), ("arm64", nil),
    ])
    func theDevicesModelNamesItsPlatform(model: String, platform: String?) {
        #expect(TabClientConfiguration.platform(forModel: model) == platform)
    }

    @Test func errorsAndGarbageKeepTheLastGoodLayout() async throws {
        let (good, goodBody) = try Self.serverLayout(title: "Good home")
        let broken = try #require(String(data: goodBody, encoding: .utf8)).replacingOccurrences(of: "\"tag\":1", with: "\"tag\":9")
        let replies: [RawHTTPResponder.Reply] = [
            .respond(status: 200, headers: Self.json + [("ETag", "\"good\"")], body: goodBody),
            .respond(
                status: 500, headers: [("Content-Type", "application/problem+json")],
                body: Data(#"{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"boom"}"#.utf8)),
            .respond(
                status: 200, headers: [("Content-Type", "text/html"), ("ETag", "\"portal\"")], body: Data("<html>Wi-Fi login</html>".utf8)),
            .respond(status: 200, headers: Self.json + [("ETag", "\"empty\"")], body: Data("{}".utf8)),
            .respond(status: 200, headers: Self.json + [("ETag", "\"broken\"")], body: Data(broken.utf8)),
            .respond(status: 200, headers: Self.json, body: goodBody),
            .respond(status: 200, headers: Self.json + [("ETag", "\"cut\"")], body: goodBody.prefix(100)),
        ]
        let responder = try RawHTTPResponder { replies[min($0, replies.count - 1)] }
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(good))
        let file = cache.appendingPathComponent("jack.tabs.json")
        let stored = try Data(contentsOf: file)

        var errors: [TabClientError] = []
        for _ in 1..<replies.count {
            do {
                try await client.refresh()
                Issue.record("a bad answer was accepted")
            } catch {
                errors.append(error)
            }
            #expect(client.current == good)
            #expect(client.validators == ["\"good\""])
            #expect(try Data(contentsOf: file) == stored)
        }
        #expect(errors.first == .unexpectedStatus(500, detail: "boom", retryAfter: nil))
        #expect(errors.contains(.missingETag))
        #expect(errors.filter { if case .invalidLayout = $0 { true } else { false } }.count == 4)
        // Every request after the first revalidated the good layout.
        #expect(responder.requests.dropFirst().allSatisfy { $0.header("If-None-Match") == "\"good\"" })
    }

    @Test func updatesHonoursRetryAfter() async throws {
        let (changed, body) = try Self.serverLayout(title: "After the outage")
        let responder = try RawHTTPResponder { index in
            index == 0
                ? .respond(
                    status: 503, headers: [("Retry-After", "1"), ("Content-Type", "application/problem+json")], body: Data("{}".utf8))
                : .respond(status: 200, headers: Self.json + [("ETag", "\"changed\"")], body: body)
        }
        let events = EventLog()
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, initialBackoff: .milliseconds(10), onEvent: events.handler),
            bundle: try Fixtures.jackBundle())
        var updates = client.updates().makeAsyncIterator()
        let layout = await updates.next()
        #expect(layout == changed)
        // The pause chosen is the server's (the backoff alone would be 10 ms at most), and it was kept.
        let pauses = events.all.compactMap { event -> Duration? in if case .failed(_, let retryIn?, _) = event { retryIn } else { nil } }
        #expect(pauses == [.seconds(1)])
        let times = responder.requests.map(\.at)
        try #require(times.count == 2)
        #expect(times[1] - times[0] >= .seconds(1))
        #expect(responder.requests[0].target == "/v1/accounts/jack/tabs?wait=30")
    }

    @Test func updatesBacksOffExponentiallyWithJitter() async throws {
        let responder = try RawHTTPResponder { _ in .respond(status: 500) }
        let events = EventLog()
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, initialBackoff: .milliseconds(100), onEvent: events.handler),
            bundle: try Fixtures.jackBundle())
        let task = Task { for await _ in client.updates() {} }
        defer { task.cancel() }
        #expect(await Fixtures.eventually(within: .seconds(60)) { responder.requests.count >= 5 })
        task.cancel()
        let delays = events.all.compactMap { event -> Duration? in
            if case .failed(.unexpectedStatus(500, _, _), let retryIn?, _) = event { retryIn } else { nil }
        }
        let times = responder.requests.map(\.at)
        try #require(delays.count >= 4 && times.count >= 5)
        for n in 1...4 {
            // Failure n waits 100 ms · 2^(n−1), less a random part of up to half of it…
            let full = Duration.milliseconds(100 * (1 << (n - 1)))
            #expect(delays[n - 1] >= full / 2 && delays[n - 1] <= full, "delay \(n): \(delays[n - 1])")
            // …and the next request waits for it.
            #expect(times[n] - times[n - 1] >= delays[n - 1], "gap \(n)")
        }
        // Jitter: four draws are not all the same.
        #expect(Set(zip(delays, [1, 2, 4, 8]).map { $0.0 / $0.1 }).count > 1)
    }

    @Test(arguments: [304, 200])
    func updatesBacksOffWhenTheServerAnswersAtOnceWithNothingNew(status: Int) async throws {
        // A server without long-poll (immediate 304), or one ignoring If-None-Match (the same 200 again).
        let bundled = try Fixtures.jackBundle().representations[0]
        let body = try JSONEncoder().encode(bundled.layout)
        let responder = try RawHTTPResponder { _ in
            .respond(status: status, headers: Self.json + [("ETag", bundled.etag)], body: status == 200 ? body : Data())
        }
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, initialBackoff: .milliseconds(100)),
            bundle: try Fixtures.jackBundle())
        let task = Task { for await _ in client.updates() {} }
        defer { task.cancel() }
        #expect(await Fixtures.eventually(within: .seconds(60)) { responder.requests.count >= 5 })
        task.cancel()
        // After the first answer that leaves the ETag as it was (the first 304; the second 200, the first having moved
        // the ETag from the bundle's), waits of 100 ms doubling, less up to half; an unguarded loop asks again at once.
        let times = responder.requests.map(\.at)
        let firstRepeat = status == 304 ? 1 : 2
        for n in firstRepeat..<Swift.min(times.count, firstRepeat + 3) {
            let least = Duration.milliseconds(50 * (1 << (n - firstRepeat)))
            #expect(times[n] - times[n - 1] >= least, "gap \(n)")
        }
    }

    @Test func cancellingTheIterationClosesTheHeldRequest() async throws {
        let responder = try RawHTTPResponder { _ in .hold }
        let client = try TabClient(configuration: Fixtures.configuration(server: responder.url), bundle: try Fixtures.jackBundle())
        let ended = Locked<ContinuousClock.Instant?>(nil)
        let task = Task {
            for await _ in client.updates() {}
            ended.withLock { $0 = .now }
        }
        #expect(await Fixtures.eventually(within: .seconds(60)) { responder.requests.count == 1 })
        let cancelledAt = ContinuousClock.now
        task.cancel()
        // The connection closes at once (timed by the responder's thread); the loop ends as soon as it runs again.
        #expect(await Fixtures.eventually(within: .seconds(60)) { !responder.heldClosedAt.isEmpty })
        let closed = try #require(responder.heldClosedAt.first)
        #expect(closed - cancelledAt < .seconds(1))
        #expect(await Fixtures.eventually(within: .seconds(60)) { ended.withLock { $0 != nil } })
        #expect(responder.requests.count == 1)
    }

    @Test func aRefreshThatGetsNoAnswerGivesUpAtItsDeadline() async throws {
        let responder = try RawHTTPResponder { _ in .hold }
        var configuration = Fixtures.configuration(server: responder.url)
        configuration.requestTimeout = .seconds(1)
        let client = try TabClient(configuration: configuration, bundle: try Fixtures.jackBundle())
        await #expect(throws: TabClientError.timedOut(seconds: 1)) { try await client.refresh() }
        #expect(client.source == .bundle)
        // The client closed the connection a second after sending (timed by the responder's thread).
        let sent = try #require(responder.requests.first?.at)
        #expect(await Fixtures.eventually(within: .seconds(60)) { !responder.heldClosedAt.isEmpty })
        let closed = try #require(responder.heldClosedAt.first)
        #expect(closed - sent >= .milliseconds(900) && closed - sent < .seconds(3))
    }
}
