import Foundation
import TabClient
import Testing

/// `TabClient` against the real `tabserver` over a socket (spawned per test, in-memory store, `configs/`).
@Suite(.serialized) struct TabClientServerTests {
    @Test func theFirstRequestWithTheBundledETagsIsA304() async throws {
        let server = try await TabServerProcess.start()
        let events = EventLog()
        let configuration = Fixtures.configuration(server: server.url, onEvent: events.handler)
        // What an app's build step downloads: the server's own `…/tabs/bundle`.
        let bundle = try await TabClient.downloadBundle(configuration)
        let client = try TabClient(configuration: configuration, bundle: bundle)
        #expect(client.source == .bundle)
        let outcome = try await client.refresh()
        #expect(outcome == .notModified)
        #expect(client.source == .server)
        #expect(client.current == bundle.representation(preferredLanguages: ["en"], platform: nil, appVersion: nil)?.layout)

        // A targeted app (platform and version in the bundle's query and in its requests' headers) as well.
        var targeted = Fixtures.configuration(server: server.url, account: "ikhoyo", languages: ["fr-CA", "en"])
        targeted.platform = "iphone"
        targeted.appVersion = "1.5"
        let targetedBundle = try await TabClient.downloadBundle(targeted)
        let targetedClient = try TabClient(configuration: targeted, bundle: targetedBundle)
        // ikhoyo's `docs` is for iPad and Mac, `settings` from app version 2.0.
        #expect(targetedClient.current.allTabs.map(\.id) == ["home", "sample-web"])
        #expect(try await targetedClient.refresh() == .notModified)
        await server.stop()
    }

    @Test func aBundleWrittenByTabserverExportMakesTheFirstRequestA304() async throws {
        // An app's build step (docs/client.md): `tabserver export` from the store the server uses, shipped in the app.
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = "sqlite:" + directory.appendingPathComponent("tabs.sqlite").path
        let server = try await TabServerProcess.start(store: store)
        let file = directory.appendingPathComponent("Tabs.bundle.json")
        try await TabServerProcess.run(["export", "jack", "--out", file.path, "--store", store, "--locale", "en", "--locale", "fr"])
        let bundle = try LayoutBundle.load(contentsOf: file)
        #expect(Set(bundle.representations.map(\.locale)) == ["en", "fr"])
        for language in ["fr", "en"] {
            let client = try TabClient(
                configuration: Fixtures.configuration(server: server.url, languages: [language]), bundle: bundle)
            #expect(client.current.locale == language)
            #expect(try await client.refresh() == .notModified)
        }
        await server.stop()
    }

    @Test func aChangeOnTheServerReachesUpdatesWithinOneSecond() async throws {
        let server = try await TabServerProcess.start()
        let events = EventLog()
        let bundle = try await Fixtures.bundleFromTabs(server: server.url)
        let client = try TabClient(
            configuration: Fixtures.configuration(server: server.url, longPollWait: .seconds(30), onEvent: events.handler),
            bundle: bundle)
        let received = Locked<[(CompiledLayout, ContinuousClock.Instant)]>([])
        let watcher = Task {
            for await layout in client.updates() { received.withLock { $0.append((layout, .now)) } }
        }
        defer { watcher.cancel() }
        #expect(await Fixtures.eventually(within: .seconds(60)) { events.longPollsSent == 1 })
        // Held, not polled: in 1.5 s, still one request and no answer.
        try await Task.sleep(for: .milliseconds(1500))
        #expect(events.longPollsSent == 1)
        #expect(!events.all.contains { if case .notModified = $0 { true } else { false } })

        try await Fixtures.changeJack(server: server.url, newsTitle: "Headlines")
        let acknowledged = ContinuousClock.now
        // Waits longer than the bound, so that a miss reports the time it took.
        #expect(await Fixtures.eventually(within: .seconds(30)) { !received.withLock { $0.isEmpty } })
        let (layout, at) = try #require(received.withLock { $0.first })
        #expect(at - acknowledged < .seconds(1))
        #expect(layout.allTabs.first { $0.id == "news" }?.title == "Headlines")
        #expect(client.current == layout)
        await server.stop()
    }

    @Test func withTheServerDownTheLastGoodLayoutIsShown() async throws {
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let bundle = try Fixtures.jackBundle()
        let server = try await TabServerProcess.start()
        let first = try TabClient(configuration: Fixtures.configuration(server: server.url, cache: cache), bundle: bundle)
        guard case .updated(let fromServer) = try await first.refresh() else {
            Issue.record("the bundled fixture's ETag matched the server's")
            return
        }
        #expect(fromServer.tabs[0].title == "Home")
        await server.stop()

        let relaunched = try TabClient(configuration: Fixtures.configuration(server: server.url, cache: cache), bundle: bundle)
        #expect(relaunched.source == .cache)
        #expect(relaunched.current == fromServer)
        await #expect(throws: TabClientError.self) { try await relaunched.refresh() }
        #expect(relaunched.current == fromServer)
        // The cache holds the layout and the install id: no temporary left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path).sorted() == ["install-id", "jack.tabs.json"])
    }

    @Test func aCorruptCacheFileFallsBackToTheBundle() async throws {
        let bundle = try Fixtures.jackBundle()
        let server = try await TabServerProcess.start()
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let client = try TabClient(configuration: Fixtures.configuration(server: server.url, cache: cache), bundle: bundle)
        _ = try await client.refresh()
        let file = cache.appendingPathComponent("jack.tabs.json")
        let good = try Data(contentsOf: file)
        let corruptions: [(String, Data)] = [
            ("truncated", good.prefix(good.count / 2)),
            ("garbage", Data((0..<512).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
            ("no tabs", Data(#"{"etag":"\"x\"","layout":{"layout":"jack","locale":"en","appearance":{},"tabs":[]}}"#.utf8)),
        ]
        for (name, bytes) in corruptions {
            try bytes.write(to: file)
            let events = EventLog()
            let relaunched = try TabClient(
                configuration: Fixtures.configuration(server: server.url, cache: cache, onEvent: events.handler), bundle: bundle)
            #expect(relaunched.source == .bundle, "\(name)")
            #expect(relaunched.current == bundle.representations[0].layout, "\(name)")
            #expect(events.all.contains { if case .cacheIgnored = $0 { true } else { false } }, "\(name)")
        }
        await server.stop()
    }

    @Test func aRelaunchFromTheCacheKeepsItsLayoutWhenALaggingServerAnswersAnOlderVersion() async throws {
        // Two servers on stores of their own: `ahead` has three more versions of jack than `lagging` (a replica that
        // has not caught up answers the same way).
        let ahead = try await TabServerProcess.start()
        let lagging = try await TabServerProcess.start()
        for title in ["One", "Two", "Three"] { try await Fixtures.changeJack(server: ahead.url, newsTitle: title) }
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let bundle = try Fixtures.jackBundle()
        let first = try TabClient(configuration: Fixtures.configuration(server: ahead.url, cache: cache), bundle: bundle)
        guard case .updated(let newer) = try await first.refresh() else {
            Issue.record("the server ahead did not send its layout")
            return
        }
        // Shown and drawn: the launch guard's pending mark is cleared, so the relaunch below has nothing to write.
        first.markRendered()
        let file = cache.appendingPathComponent("jack.tabs.json")
        let stored = try Data(contentsOf: file)

        let relaunched = try TabClient(configuration: Fixtures.configuration(server: lagging.url, cache: cache), bundle: bundle)
        #expect(relaunched.source == .cache && relaunched.current == newer)
        guard case .droppedOlder(let dropped, let kept) = try await relaunched.refresh() else {
            Issue.record("the lagging server's older layout was not dropped")
            return
        }
        #expect(kept == LayoutReference(layout: "jack", version: newer.version, etag: first.validators.first, source: .cache))
        #expect(dropped.layout == "jack" && (dropped.version ?? .max) < (newer.version ?? 0))
        #expect(relaunched.current == newer && relaunched.current.allTabs.contains { $0.title == "Three" })
        #expect(try Data(contentsOf: file) == stored)

        // Once the lagging server is ahead in its turn, its layout is taken.
        for title in ["A", "B", "C", "D"] { try await Fixtures.changeJack(server: lagging.url, newsTitle: title) }
        guard case .updated(let caughtUp) = try await relaunched.refresh() else {
            Issue.record("a newer layout was not taken")
            return
        }
        #expect((caughtUp.version ?? 0) > (newer.version ?? 0) && relaunched.source == .server)
        await ahead.stop()
        await lagging.stop()
    }

    @Test func aCrashMidWriteLeavesThePreviousCopy() async throws {
        let bundle = try Fixtures.jackBundle()
        let server = try await TabServerProcess.start()
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let client = try TabClient(configuration: Fixtures.configuration(server: server.url, cache: cache), bundle: bundle)
        guard case .updated(let stored) = try await client.refresh() else {
            Issue.record("expected a 200")
            return
        }
        // What a crash during the next write leaves: a half-written temporary beside the good file.
        let leftover = cache.appendingPathComponent(".jack.tabs.json.tmp-\(UUID().uuidString)")
        try Data(#"{"etag":"\"new\"","layout":{"layout":"ja"#.utf8).write(to: leftover)
        let relaunched = try TabClient(configuration: Fixtures.configuration(server: server.url, cache: cache), bundle: bundle)
        #expect(relaunched.source == .cache)
        #expect(relaunched.current == stored)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        await server.stop()
    }

    @Test func everyCompiledLayoutOfTheConfigsDecodesAndValidates() async throws {
        let server = try await TabServerProcess.start()
        let accounts = try FileManager.default.contentsOfDirectory(
            atPath: Fixtures.repository.appendingPathComponent("configs/layouts").path
        ).map { String($0.prefix { $0 != "." }) }
        #expect(accounts.count >= 5)
        for account in accounts {
            for (language, platform) in [("en", "iphone"), ("fr-CA", "ipad"), ("de", "mac")] {
                let answer = try await Fixtures.request(
                    "GET", server.url.appendingPathComponent("v1/accounts/\(account)/tabs"),
                    headers: ["Accept-Language": language, "X-Client-Platform": platform])
                #expect(answer.status == 200, "\(account)")
                let layout = try CompiledLayout.decode(answer.body)
                #expect(layout.layout == account)
                #expect(try CompiledLayout.decode(try JSONEncoder().encode(layout)) == layout)
            }
        }
        await server.stop()
    }
}
