import Foundation
import Testing

@testable import TabClient

/// The cache file: what wins at launch, and what happens when it cannot be written.
@Suite struct LayoutCacheTests {
    @Test func aBundleNewerThanTheCacheWins() throws {
        var bundle = try Fixtures.jackBundle()
        var cached = bundle.representations[0].layout
        cached.tabs[0].title = "Cached home"
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try LayoutCache(directory: directory, account: "jack").store(body: try JSONEncoder().encode(cached), etag: "\"cached\"")
        let refusing = try RefusingPort()
        let offline = refusing.url

        // Same version: the cache (newer, from the server) wins.
        let same = try TabClient(configuration: Fixtures.configuration(server: offline, cache: directory), bundle: bundle)
        #expect(same.source == .cache && same.current == cached && same.validators == ["\"cached\""])

        // The app was updated with a bundle of a later version: it wins over the old cache.
        bundle.representations[0].layout.version = (cached.version ?? 0) + 1
        let updated = try TabClient(configuration: Fixtures.configuration(server: offline, cache: directory), bundle: bundle)
        #expect(updated.source == .bundle && updated.current == bundle.representations[0].layout)
        withExtendedLifetime(refusing) {}
    }

    @Test func aCacheThatCannotBeWrittenStillShowsTheNewLayoutAndSaysWhy() async throws {
        var layout = try Fixtures.jackBundle().representations[0].layout
        layout.tabs[0].title = "New home"
        let body = try JSONEncoder().encode(layout)
        let responder = try RawHTTPResponder { _ in
            .respond(status: 200, headers: [("Content-Type", "application/json"), ("ETag", "\"new\"")], body: body)
        }
        // A regular file where the cache directory should be: nothing can be created below it.
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let blocker = directory.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: blocker)
        let events = EventLog()
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, cache: blocker, onEvent: events.handler),
            bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(layout))
        #expect(client.current == layout && client.source == .server)
        #expect(events.all.contains { if case .failed(.cacheWriteFailed, _, _) = $0 { true } else { false } })
    }

    @Test func aStoredLayoutReadsBackWithItsETag() throws {
        let layout = try Fixtures.jackBundle().representations[0].layout
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = LayoutCache(directory: directory, account: "jack")
        try cache.store(body: try JSONEncoder().encode(layout), etag: "\"a \\\"quoted\\\" tag\"")
        guard case .success(let entry)? = cache.load() else {
            Issue.record("no entry")
            return
        }
        #expect(entry.layout == layout && entry.etag == "\"a \\\"quoted\\\" tag\"")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["jack.tabs.json"])
    }
}
