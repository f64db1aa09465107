import Foundation
import Testing

@testable import TabClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A lower `version` of the layout shown is dropped whatever the layout shown came from (server, cache, bundle);
/// a `200` with the ETag already stored leaves the cache file alone; outcomes and events say which layout they
/// concern. Against a scripted responder on a real socket (a lagging replica is one that answers an old version).
@Suite struct OlderAnswerTests {
    static let json = [("Content-Type", "application/json")]

    /// jack's bundled layout as version `version`, its first tab titled after it, and the body a server sends.
    static func jack(version: Int) throws -> (layout: CompiledLayout, body: Data, etag: String) {
        var layout = try Fixtures.jackBundle().representations[0].layout
        layout.version = version
        layout.tabs[0].title = "Version \(version)"
        return (layout, try JSONEncoder().encode(layout), "\"v\(version)\"")
    }

    /// A responder that answers every request `200` with `answer` (a replica that ignores `If-None-Match`, or one
    /// whose layout differs), after the answers in `first`.
    static func responder(first: [(body: Data, etag: String)] = [], then answer: (body: Data, etag: String)) throws -> RawHTTPResponder {
        let answers = first + [answer]
        return try RawHTTPResponder { index in
            let (body, etag) = answers[min(index, answers.count - 1)]
            return .respond(status: 200, headers: Self.json + [("ETag", etag)], body: body)
        }
    }

    /// The cache file's inode and modification time (nanoseconds): a rewrite (a new file renamed over it) changes
    /// the inode.
    static func identity(of file: URL) throws -> (inode: UInt64, modified: Int64) {
        var info = stat()
        guard stat(file.path, &info) == 0 else { throw TestFailure("stat \(file.path): errno \(errno)") }
        #if canImport(Darwin)
            let modified = Int64(info.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(info.st_mtimespec.tv_nsec)
        #else
            let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        #endif
        return (UInt64(info.st_ino), modified)
    }

    @Test func aRelaunchFromTheCacheKeepsItsNewerLayoutWhenALaggingReplicaAnswersAnOlderOne() async throws {
        let v21 = try Self.jack(version: 21)
        let v11 = try Self.jack(version: 11)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        // An earlier run stored v21.
        let earlier = try Self.responder(then: (v21.body, v21.etag))
        let first = try TabClient(
            configuration: Fixtures.configuration(server: earlier.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(try await first.refresh() == .updated(v21.layout))
        first.markRendered()  // as the app does once it is on screen (else the next launch counts a launch for the guard)
        let file = cache.appendingPathComponent("jack.tabs.json")
        let stored = try Data(contentsOf: file)
        let before = try Self.identity(of: file)

        // Relaunched: v21 from the cache; the first answer comes from a replica still at v11.
        let lagging = try Self.responder(then: (v11.body, v11.etag))
        let events = EventLog()
        let relaunched = try TabClient(
            configuration: Fixtures.configuration(server: lagging.url, cache: cache, onEvent: events.handler),
            bundle: try Fixtures.jackBundle())
        #expect(relaunched.source == .cache && relaunched.current == v21.layout)
        let kept = LayoutReference(layout: "jack", version: 21, etag: v21.etag, source: .cache)
        let dropped = LayoutReference(layout: "jack", version: 11, etag: v11.etag, source: .server)
        #expect(try await relaunched.refresh() == .droppedOlder(dropped: dropped, kept: kept))
        #expect(relaunched.current == v21.layout && relaunched.source == .cache && relaunched.validators == [v21.etag])
        #expect(lagging.requests.first?.header("If-None-Match") == v21.etag)
        #expect(events.all.dropFirst() == [.droppedOlder(dropped, kept: kept)])
        // Nothing was saved: the file is the one the earlier run wrote, and the next launch shows v21 again.
        #expect(try Data(contentsOf: file) == stored)
        let after = try Self.identity(of: file)
        #expect(after.inode == before.inode && after.modified == before.modified)
        let next = try TabClient(
            configuration: Fixtures.configuration(server: lagging.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(next.current == v21.layout)
    }

    @Test func aBundledLayoutIsKeptWhenTheFirstAnswerIsAnOlderVersion() async throws {
        var bundle = try Fixtures.jackBundle()
        bundle.representations[0].layout.version = 21
        let bundled = bundle.representations[0]
        let v11 = try Self.jack(version: 11)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let lagging = try Self.responder(then: (v11.body, v11.etag))
        let client = try TabClient(configuration: Fixtures.configuration(server: lagging.url, cache: cache), bundle: bundle)
        #expect(client.source == .bundle)
        let outcome = try await client.refresh()
        #expect(
            outcome
                == .droppedOlder(
                    dropped: LayoutReference(layout: "jack", version: 11, etag: v11.etag, source: .server),
                    kept: LayoutReference(layout: "jack", version: 21, etag: bundled.validators.first, source: .bundle)))
        #expect(client.current == bundled.layout && client.source == .bundle && client.validators == bundled.validators)
        // Not stored either: the next launch shows the bundle (the install id alone is beside it).
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path) == ["install-id"])
    }

    @Test func anAnswerOlderThanOneReceivedThisRunIsDropped() async throws {
        let v5 = try Self.jack(version: 5)
        let v4 = try Self.jack(version: 4)
        let responder = try Self.responder(first: [(v5.body, v5.etag)], then: (v4.body, v4.etag))
        let client = try TabClient(configuration: Fixtures.configuration(server: responder.url), bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(v5.layout))
        guard case .droppedOlder(let dropped, let kept) = try await client.refresh() else {
            Issue.record("the older answer was not dropped")
            return
        }
        #expect(dropped.version == 4 && kept == LayoutReference(layout: "jack", version: 5, etag: v5.etag, source: .server))
        #expect(client.current == v5.layout && client.validators == [v5.etag])
    }

    @Test func aNewerVersionOrAnotherLayoutReplacesTheCachedOne() async throws {
        let v21 = try Self.jack(version: 21)
        let v22 = try Self.jack(version: 22)
        // The account now gets another layout (`default`, at a lower version): not "an older version of the same".
        var other = try Self.jack(version: 3)
        other.layout.layout = "default"
        other.body = try JSONEncoder().encode(other.layout)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        try LayoutCache(directory: cache, account: "jack").store(body: v21.body, etag: v21.etag)
        let responder = try Self.responder(first: [(v22.body, v22.etag)], then: (other.body, "\"other\""))
        let events = EventLog()
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, cache: cache, onEvent: events.handler),
            bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(v22.layout))
        #expect(
            events.all.last
                == .updated(
                    LayoutReference(layout: "jack", version: 22, etag: v22.etag, source: .server),
                    replacing: LayoutReference(layout: "jack", version: 21, etag: v21.etag, source: .cache)))
        #expect(try await client.refresh() == .updated(other.layout))
        #expect(LayoutCache(directory: cache, account: "jack").load() == .success(.init(etag: "\"other\"", layout: other.layout)))
    }

    @Test func aTwoHundredWithTheStoredETagDoesNotRewriteTheCacheFile() async throws {
        // A cache on the way that answers 200 from its copy instead of 304 (Squid does for If-None-Match alone).
        let v21 = try Self.jack(version: 21)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let responder = try Self.responder(then: (v21.body, v21.etag))
        let events = EventLog()
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, cache: cache, onEvent: events.handler),
            bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(v21.layout))
        client.markRendered()  // as the app does once it is on screen (else the next launch counts a launch for the guard)
        let file = cache.appendingPathComponent("jack.tabs.json")
        let written = try Self.identity(of: file)
        try await Task.sleep(for: .milliseconds(20))  // a rewrite would have a later modification time too

        #expect(try await client.refresh() == .unchanged)
        #expect(events.all.last == .unchanged(LayoutReference(layout: "jack", version: 21, etag: v21.etag, source: .server)))
        var now = try Self.identity(of: file)
        #expect(now.inode == written.inode && now.modified == written.modified)

        // Relaunched from that file: the same 200 leaves it alone too, and says the layout is the server's.
        let relaunched = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, cache: cache), bundle: try Fixtures.jackBundle())
        #expect(relaunched.source == .cache)
        #expect(try await relaunched.refresh() == .unchanged)
        #expect(relaunched.source == .server && relaunched.current == v21.layout)
        now = try Self.identity(of: file)
        #expect(now.inode == written.inode && now.modified == written.modified)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path).sorted() == ["install-id", "jack.tabs.json"])
    }

    @Test func refreshTellsA304FromADroppedOlderAnswerAndEventsNameTheLayout() async throws {
        let v21 = try Self.jack(version: 21)
        let v11 = try Self.jack(version: 11)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        try LayoutCache(directory: cache, account: "jack").store(body: v21.body, etag: v21.etag)
        let replies: [RawHTTPResponder.Reply] = [
            .respond(status: 200, headers: Self.json + [("ETag", v11.etag)], body: v11.body),
            .respond(status: 304, headers: [("ETag", v21.etag)]),
        ]
        let responder = try RawHTTPResponder { replies[min($0, replies.count - 1)] }
        let events = EventLog()
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, cache: cache, onEvent: events.handler),
            bundle: try Fixtures.jackBundle())
        let fromCache = LayoutReference(layout: "jack", version: 21, etag: v21.etag, source: .cache)
        let older = LayoutReference(layout: "jack", version: 11, etag: v11.etag, source: .server)
        #expect(try await client.refresh() == .droppedOlder(dropped: older, kept: fromCache))
        #expect(try await client.refresh() == .notModified)
        var confirmed = fromCache
        confirmed.source = .server
        let url = responder.url.appendingPathComponent("v1/accounts/jack/tabs")
        #expect(
            events.all == [
                .requestSent(url: url, longPoll: false, shown: fromCache), .droppedOlder(older, kept: fromCache),
                .requestSent(url: url, longPoll: false, shown: fromCache), .notModified(confirmed),
            ])
        #expect(client.reference == confirmed)
    }

    @Test func updatesNeverYieldsAnOlderLayoutAndBacksOffFromTheLaggingReplica() async throws {
        let v21 = try Self.jack(version: 21)
        let v11 = try Self.jack(version: 11)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        try LayoutCache(directory: cache, account: "jack").store(body: v21.body, etag: v21.etag)
        // Lagging for four answers, then caught up with a v22.
        let v22 = try Self.jack(version: 22)
        let lagging = Array(repeating: (body: v11.body, etag: v11.etag), count: 4)
        let responder = try Self.responder(first: lagging, then: (v22.body, v22.etag))
        let timeline = Locked<[(event: TabClientEvent, at: ContinuousClock.Instant)]>([])
        let client = try TabClient(
            configuration: Fixtures.configuration(
                server: responder.url, cache: cache, initialBackoff: .milliseconds(40),
                onEvent: { event in timeline.withLock { $0.append((event, .now)) } }),
            bundle: try Fixtures.jackBundle())
        var updates = client.updates().makeAsyncIterator()
        let next = await updates.next()
        #expect(next == v22.layout)
        #expect(responder.requests.count == 5)
        // Each older answer that came back sooner than a held poll ends (1 s, as the client measures it) was followed by
        // a backoff (40 ms doubling, less up to half), not a retry at once. Measured on the client's clock: on a loaded
        // machine an exchange can take the client over a second, and then it counts as held and the doubling starts
        // again, as the rule says (measured on the server's clock, that case failed this test without a fault).
        let events = timeline.withLock { $0 }
        let sent = events.compactMap { if case .requestSent = $0.event { $0.at } else { nil } }
        let dropped = events.compactMap { if case .droppedOlder = $0.event { $0.at } else { nil } }
        #expect(sent.count == 5 && dropped.count == 4)
        var soon = 0
        for n in 1..<min(sent.count, dropped.count + 1) {
            guard dropped[n - 1] - sent[n - 1] < .seconds(1) else {
                soon = 0
                continue
            }
            soon += 1
            #expect(sent[n] - dropped[n - 1] >= .milliseconds(20 * (1 << (soon - 1))), "gap \(n)")
        }
    }
}
