import Foundation
import Logging
import TabConfigs
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// A service over a memory store with the repository's configs, run in process through the route table.
private func inProcessService(maxWait: Int = 300) async throws -> TabService {
    try await ServiceHarness.inProcess { $0.maxWaitSeconds = maxWait }
}

private let admin = [("Authorization", "Bearer \(ServiceHarness.token)")]

/// The answer once the variant's brotli form exists (it is made off the request's thread after the first request;
/// gzip or identity meanwhile). Gives up after 10 s.
private func onceBrotliIsMade(_ service: TabService, _ request: TestRequest) async throws -> TestResponse {
    let deadline = ContinuousClock.now + .seconds(10)
    while true {
        let answer = await service.respond(to: request)
        if answer.header("Content-Encoding") == "br" || ContinuousClock.now > deadline { return answer }
        try await Task.sleep(for: .milliseconds(20))
    }
}
private let iOS = [("Accept", "*/*"), ("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"), ("Accept-Encoding", "gzip, deflate, br")]

/// The route table, the publisher and the client plane, in process (no socket).
@Suite struct RouteTableTests {
    @Test func unknownPathsAre404AndWrongMethodsAre405WithTheTablesAllow() async throws {
        let service = try await inProcessService()
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/extra")).status == 404)
        let wrong = await service.respond(to: TestRequest(.delete, "/v1/accounts/jack/tabs"))
        #expect(wrong.status == 405 && wrong.header("Allow") == "GET, HEAD")
        #expect(wrong.header("Cache-Control") == "no-store")
        let layout = await service.respond(to: TestRequest(.post, "/v1/accounts/jack/layout", headers: admin))
        #expect(layout.header("Allow") == "GET, HEAD, PUT, PATCH, DELETE")
    }

    @Test func adminRoutesCheckTheTokenBeforeTheMethodAndBeforeAnyBody() async throws {
        let service = try await inProcessService()
        let noToken = TestRequest(.post, "/v1/accounts/jack/layout", headers: [("Content-Length", "1048000")])
        #expect(service.refusalBeforeBody(noToken.request)?.status == 401)
        #expect(service.refusalBeforeBody(TestRequest(.put, "/nowhere", headers: [("Content-Length", "10")]).request)?.status == 404)
        #expect(
            service.refusalBeforeBody(TestRequest(.put, "/v1/accounts/jack/layout", headers: admin + [("Content-Length", "10")]).request)
                == nil)
        #expect(
            service.refusalBeforeBody(TestRequest(.post, "/v1/accounts/jack/tabs", headers: [("Content-Length", "10")]).request)?.status
                == 405)
    }

    @Test func repeatedWrongTokensFromOneAddressAreRefusedForAWhile() async throws {
        let service = try await inProcessService()
        for _ in 0..<Credentials.allowedFailures {
            let answer = await service.respond(
                to: TestRequest(.get, "/v1/accounts", headers: [("Authorization", "Bearer wrong")], clientAddress: "192.0.2.7"))
            #expect(answer.status == 401)
        }
        let locked = await service.respond(
            to: TestRequest(.get, "/v1/accounts", headers: [("Authorization", "Bearer wrong")], clientAddress: "192.0.2.7"))
        #expect(locked.status == 429 && locked.header("Retry-After") != nil)
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts", headers: admin, clientAddress: "192.0.2.8")).status == 200)
    }

    @Test func behindATrustedProxyFailuresCountPerForwardedClient() async throws {
        let store = MemoryStore()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let service = try await TabService(
            store: store,
            configuration: ServiceConfiguration(adminTokens: [("tester", ServiceHarness.token)], trustedProxies: ["10.0.0.1"]),
            logger: logger)
        let wrong = [("Authorization", "Bearer wrong-token-0123456789")]
        for _ in 0..<Credentials.allowedFailures {
            _ = await service.respond(
                to: TestRequest(
                    .get, "/v1/accounts", headers: wrong + [("X-Forwarded-For", "203.0.113.9, 198.51.100.4")], clientAddress: "10.0.0.1"))
        }
        // The attacker behind the proxy is locked out; another client of the same proxy is not.
        let attacker = TestRequest(.get, "/v1/accounts", headers: wrong + [("X-Forwarded-For", "198.51.100.4")], clientAddress: "10.0.0.1")
        #expect(await service.respond(to: attacker).status == 429)
        let other = TestRequest(
            .get, "/v1/accounts", headers: admin + [("Forwarded", "for=\"[2001:db8::7]:4711\"")], clientAddress: "10.0.0.1")
        #expect(await service.respond(to: other).status == 200)
        // An untrusted peer's X-Forwarded-For is not believed.
        #expect(
            service.clientAddress(TestRequest(.get, "/", headers: [("X-Forwarded-For", "1.2.3.4")], clientAddress: "10.9.9.9").request)
                == "10.9.9.9")
        #expect(ClientAddresses.nodeAddress("192.0.2.1:4711") == "192.0.2.1" && ClientAddresses.nodeAddress("2001:db8::1") == "2001:db8::1")
    }

    /// A trusted proxy that writes no forwarding header passes the client's own `Forwarded` through: only the header
    /// the proxies are configured to write is read (docs/security.md, review 4, finding 8).
    @Test func onlyTheConfiguredForwardingHeaderIsBelieved() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = ServiceConfiguration(adminTokens: [("tester", ServiceHarness.token)], trustedProxies: ["10.0.0.1"])
        let byDefault = try await TabService(store: MemoryStore(), configuration: configuration, logger: logger)
        let forged = TestRequest(.get, "/", headers: [("Forwarded", "for=203.0.113.9")], clientAddress: "10.0.0.1").request
        #expect(byDefault.clientAddress(forged) == "10.0.0.1", "the client's own Forwarded is not believed")
        let named = TestRequest(.get, "/", headers: [("X-Forwarded-For", "198.51.100.4")], clientAddress: "10.0.0.1").request
        #expect(byDefault.clientAddress(named) == "198.51.100.4")
        configuration.forwardedHeader = .forwarded
        let rfc7239 = try await TabService(store: MemoryStore(), configuration: configuration, logger: logger)
        let quoted = TestRequest(.get, "/", headers: [("Forwarded", "for=\"[2001:db8::7]:4711\"")], clientAddress: "10.0.0.1").request
        #expect(rfc7239.clientAddress(quoted) == "2001:db8::7")
        #expect(rfc7239.clientAddress(named) == "10.0.0.1", "now X-Forwarded-For is the one not read")
    }

    @Test func everyCodingIsItsOwnRepresentationAndRevalidatesTo304() async throws {
        let service = try await inProcessService()
        let identity = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Language", "fr")]))
        let first = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: iOS))
        #expect(first.header("Content-Encoding") != nil, "the first answer is compressed already (gzip is made at once)")
        let brotli = try await onceBrotliIsMade(service, TestRequest(.get, "/v1/accounts/jack/tabs", headers: iOS))
        #expect(brotli.header("Content-Encoding") == "br")
        // A client that got the gzip form before brotli landed still revalidates to 304 with the same headers.
        if first.header("Content-Encoding") == "gzip" {
            let held = await service.respond(
                to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: iOS + [("If-None-Match", first.header("ETag") ?? "")]))
            #expect(held.status == 304 && held.header("ETag") == first.header("ETag"))
        }
        #expect(brotli.body.count < identity.body.count)
        #expect(brotli.header("ETag") != identity.header("ETag"))
        #expect(brotli.header("Vary")?.contains("Accept-Encoding") == true)
        let again = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: iOS + [("If-None-Match", brotli.header("ETag") ?? "")]))
        #expect(again.status == 304)
        // A tag of the br form never validates the identity form.
        let other = await service.respond(
            to: TestRequest(
                .get, "/v1/accounts/jack/tabs", headers: [("Accept-Language", "fr"), ("If-None-Match", brotli.header("ETag") ?? "")]))
        #expect(other.status == 200 && other.header("Content-Encoding") == nil)
        // A cache that reduced Accept-Encoding to br gets br on a variant's very first request, never identity it would keep.
        let brOnly = await service.respond(to: TestRequest(.get, "/v1/accounts/jill/tabs", headers: [("Accept-Encoding", "br")]))
        #expect(brOnly.header("Content-Encoding") == "br")
        let refused = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Encoding", "identity;q=0, zstd")]))
        #expect(refused.status == 406)
    }

    @Test func conditionalRequestsFollowRFC9110Section13() async throws {
        let service = try await inProcessService()
        let first = await service.respond(to: TestRequest(.get, "/v1/accounts/jill/tabs"))
        let etag = try #require(first.header("ETag"))
        let modified = try #require(first.header("Last-Modified"))
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jill/tabs", headers: [("If-Match", "\"other\"")])).status == 412)
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jill/tabs", headers: [("If-Match", etag)])).status == 200)
        #expect(
            await service.respond(
                to: TestRequest(.get, "/v1/accounts/jill/tabs", headers: [("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")])
            )
            .status == 412)
        #expect(
            await service.respond(to: TestRequest(.get, "/v1/accounts/jill/tabs", headers: [("If-Modified-Since", modified)])).status == 304
        )
        // RFC 850 and asctime forms are accepted (a far-future date: not modified since).
        for date in ["Friday, 31-Dec-99 23:59:59 GMT", "Fri Dec 31 23:59:59 2099"] {
            let answer = await service.respond(to: TestRequest(.get, "/v1/accounts/jill/tabs", headers: [("If-Modified-Since", date)]))
            #expect(answer.status == (date.hasSuffix("2099") ? 304 : 200), "\(date)")
        }
    }

    @Test func aChangeInTheSameSecondNeverGivesAWrong304ForIfModifiedSince() async throws {
        let service = try await inProcessService()
        let create = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/twice/layout", headers: admin + [("Content-Type", "application/json")], body: document(["A"])))
        #expect(create.status == 201)
        let first = await service.respond(to: TestRequest(.get, "/v1/accounts/twice/tabs"))
        let update = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/twice/layout",
                headers: admin + [("Content-Type", "application/json"), ("If-Match", create.header("ETag") ?? "")], body: document(["B"])))
        #expect(update.status == 200)
        let second = await service.respond(
            to: TestRequest(.get, "/v1/accounts/twice/tabs", headers: [("If-Modified-Since", first.header("Last-Modified") ?? "")]))
        #expect(second.status == 200, "the content changed; a 304 would keep the old one")
    }

    @Test func publicationsCarrySequenceNumbersAndChangeEvents() async throws {
        let service = try await inProcessService()
        let before = service.snapshot.sequence
        let write = await service.respond(
            to: TestRequest(.put, "/v1/accounts/seq/layout", headers: admin + [("Content-Type", "application/json")], body: document(["A"]))
        )
        #expect(write.status == 201)
        #expect(service.snapshot.sequence == before + 1)
        guard case .events(let events) = service.publisher.feed.events(after: before, current: service.publisher.snapshot.sequence) else {
            Issue.record("the feed lost the event")
            return
        }
        #expect(events.map(\.account) == ["seq"] && events.first?.sequence == before + 1 && events.first?.etag == write.header("ETag"))
        let feed = await service.respond(to: TestRequest(.get, "/v1/events", headers: admin + [("Last-Event-ID", String(before))]))
        #expect(feed.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        #expect(feed.text.contains("event: layout\nid: \(before + 1)\n"))
        #expect(feed.text.contains("\"account\":\"seq\""))
    }

    @Test func aLongPollAnswersTheNewRepresentationWhenItChangesAnd304WhenTheServiceStops() async throws {
        let service = try await inProcessService()
        let create = await service.respond(
            to: TestRequest(.put, "/v1/accounts/lp/layout", headers: admin + [("Content-Type", "application/json")], body: document(["A"])))
        let current = await service.respond(to: TestRequest(.get, "/v1/accounts/lp/tabs"))
        let etag = try #require(current.header("ETag"))
        async let held = service.respond(
            to: TestRequest(.get, "/v1/accounts/lp/tabs", query: [("wait", "30")], headers: [("If-None-Match", etag)]))
        #expect(try await eventually(seconds: 10) { service.publisher.waiters.held == 1 })
        _ = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/lp/layout",
                headers: admin + [("Content-Type", "application/json"), ("If-Match", create.header("ETag") ?? "")],
                body: document(["B"])))
        let woken = await held
        #expect(woken.status == 200 && woken.header("ETag") != etag)
        let newTag = try #require(woken.header("ETag"))
        async let stopped = service.respond(
            to: TestRequest(.get, "/v1/accounts/lp/tabs", headers: [("If-None-Match", newTag), ("Prefer", "wait=30")]))
        #expect(try await eventually(seconds: 10) { service.publisher.waiters.held == 1 })
        service.beginStopping()
        let answer = await stopped
        #expect(answer.status == 304 && answer.header("Preference-Applied") == "wait=30")
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/lp/tabs", query: [("wait", "x")])).status == 400)
    }

    @Test func aDryRunAlsoReportsWhatStoringWouldChange() async throws {
        let service = try await inProcessService()
        _ = await service.respond(
            to: TestRequest(.put, "/v1/accounts/dry/layout", headers: admin + [("Content-Type", "application/json")], body: document(["A"]))
        )
        let dry = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/dry/layout", query: [("dryRun", "true")], headers: admin + [("Content-Type", "application/json")],
                body: document(["A", "B"])))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(dry.body)) as? [String: Any])
        let diff = try #require(object["diff"] as? [String: Any])
        let changes = try #require(diff["changes"] as? [[String: Any]])
        #expect(diff["from"] as? Int == 1 && changes.contains { $0["op"] as? String == "added" && $0["tab"] as? String == "t1" })
        #expect((object["tabs"] as? [[String: Any]])?.count == 2)
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/dry/layout", headers: admin)).header("Layout-Version") == "1")
    }

    @Test func aPreviewWithAnotherTabSelectedMakesTheSameChoicesAsTheClientPlane() async throws {
        let service = try await inProcessService()
        let drawn = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs/preview.svg", query: [("selected", "home"), ("locale", "fr")]))
        #expect(drawn.status == 200 && drawn.header("Content-Type") == "image/svg+xml" && drawn.text.contains("<svg"))
        #expect(drawn.text.contains("Maison"), "drawn in the locale asked for")
        let unknownTab = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/preview.svg", query: [("selected", "nope")]))
        #expect(unknownTab.status == 400)
        let badPlatform = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs/preview.svg", query: [("selected", "home"), ("platform", "watch")]))
        #expect(badPlatform.status == 400)
    }

    @Test func theBundleCarriesTheTagsTheClientPlaneServes() async throws {
        let service = try await inProcessService()
        let bundle = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/bundle", query: [("locale", "fr")]))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bundle.body)) as? [String: Any])
        let first = try #require((object["representations"] as? [[String: Any]])?.first)
        let served = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("locale", "fr")]))
        #expect(first["etag"] as? String == served.header("ETag"))
        let brotli = try await onceBrotliIsMade(
            service, TestRequest(.get, "/v1/accounts/jack/tabs", query: [("locale", "fr")], headers: iOS))
        let again = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/bundle", query: [("locale", "fr")]))
        let bundled = try #require(try JSONSerialization.jsonObject(with: Data(again.body)) as? [String: Any])
        let etags = (bundled["representations"] as? [[String: Any]])?.first?["etags"] as? [String: String]
        #expect(etags?["br"] == brotli.header("ETag") && etags?["gzip"] != nil)
    }
}
