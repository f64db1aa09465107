import Foundation
import Logging
import TabConfigs
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

/// Long-poll answers (`?wait=` or `Prefer: wait`, held or answered at once) carry `Cache-Control: no-store`, so that
/// no shared cache keeps them (Squid 5.7 stored them, then held polls it should have answered and answered `200`
/// where the poll ended in `304`); every other client-plane answer keeps the configured `Cache-Control`.
@Suite struct LongPollCachingTests {
    static let shared = "max-age=0, s-maxage=3"

    static func service() async throws -> TabService {
        try await ServiceHarness.inProcess { $0.cacheControl = shared }
    }

    @Test func aPlainRequestKeepsTheConfiguredCacheControl() async throws {
        let service = try await Self.service()
        let first = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs"))
        #expect(first.status == 200 && first.header("Cache-Control") == Self.shared)
        let etag = try #require(first.header("ETag"))
        let again = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("If-None-Match", etag)]))
        #expect(again.status == 304 && again.header("Cache-Control") == Self.shared)
    }

    @Test(arguments: [
        ([("wait", "30")], [(String, String)]()), ([], [("Prefer", "wait=30")]), ([("wait", "0")], []),
    ])
    func aLongPollAnsweredAtOnceIsNoStore(query: [(String, String)], headers: [(String, String)]) async throws {
        let service = try await Self.service()
        // No If-None-Match, and one that does not match: a full answer at once.
        for extra in [[], [("If-None-Match", "\"stale\"")]] {
            let answer = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", query: query, headers: headers + extra))
            #expect(answer.status == 200 && answer.header("Cache-Control") == "no-store", "\(query) \(headers) \(extra)")
            #expect(answer.header("ETag") != nil && answer.header("Vary") != nil && !answer.body.isEmpty)
        }
        // HEAD answers the headers GET would.
        let head = await service.respond(to: TestRequest(.head, "/v1/accounts/jack/tabs", query: query, headers: headers))
        #expect(head.status == 200 && head.header("Cache-Control") == "no-store")
    }

    @Test func aHeldLongPollIsNoStoreWhetherItEndsIn304OrIsWoken() async throws {
        let service = try await Self.service()
        let etag = try #require(await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs")).header("ETag"))
        // Held to its end (one second): 304, no-store, with the ETag and Vary a 304 must have.
        let ended = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("wait", "1")], headers: [("If-None-Match", etag)]))
        #expect(ended.status == 304 && ended.header("Cache-Control") == "no-store")
        #expect(ended.header("ETag") == etag && ended.header("Vary") != nil)

        // Woken by a write: 200 with the new layout, no-store.
        async let held = service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("If-None-Match", etag), ("Prefer", "wait=30")]))
        // Held before the write (10 s at most: a poll answered at once would leave `held` at 0).
        let holding = ContinuousClock.now
        while service.publisher.waiters.held < 1 && ContinuousClock.now - holding < .seconds(10) {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(service.publisher.waiters.held == 1)
        let source = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/layout", headers: ServiceHarness.admin()))
        var document = try #require(try JSONSerialization.jsonObject(with: Data(source.body)) as? [String: Any])
        var tabs = try #require(document["tabs"] as? [[String: Any]])
        tabs[0]["title"] = "Woken"
        document["tabs"] = tabs
        let put = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/jack/layout",
                headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", source.header("ETag") ?? "")]),
                body: Array(try JSONSerialization.data(withJSONObject: document))))
        #expect(put.status == 200)
        let woken = await held
        #expect(woken.status == 200 && woken.header("ETag") != etag && woken.header("Cache-Control") == "no-store")
        #expect(woken.header("Preference-Applied") == "wait=30")
        // The plain answer is still the shared one.
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs")).header("Cache-Control") == Self.shared)
    }

    @Test func overASocketTheLongPollIsNoStoreAndThePlainAnswerIsNot() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let plain = try await client.send("GET", "/v1/accounts/jill/tabs")
        #expect(plain.status == 200 && plain.header("Cache-Control") == "no-cache")
        let etag = try #require(plain.header("ETag"))
        let polled = try await client.send("GET", "/v1/accounts/jill/tabs?wait=1", headers: [("If-None-Match", etag)])
        #expect(polled.status == 304 && polled.header("Cache-Control") == "no-store" && polled.header("ETag") == etag)
        let immediate = try await client.send("GET", "/v1/accounts/jill/tabs?wait=1")
        #expect(immediate.status == 200 && immediate.header("Cache-Control") == "no-store")
        harness.application.stop()
    }
}
