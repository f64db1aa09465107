import Foundation
import Logging
import MicroHTTPD
import Synchronization
import TabConfigs
import TabServiceTestSupport
import TabStore
import TabWebhooks
import Testing

@testable import TabService

/// Cache keys on the client plane's answers (`Surrogate-Key`, `Cache-Tag`), and the purges a change sends to
/// `--purge-url` (recorded here in place of libcurl; `scripts/proxy-test` sends them to a real Varnish).
@Suite struct CachePurgeTests {
    /// The purges sent: each target's URL and its `Surrogate-Key`.
    final class Recorder: Sendable {
        let sent = Mutex<[(url: String, keys: String)]>([])
        let answer: DeliveryAnswer
        init(answer: DeliveryAnswer = .status(200)) { self.answer = answer }

        var send: CachePurger.Send {
            { url, headers in
                self.sent.withLock { $0.append((url, headers.first { $0.name == "Surrogate-Key" }?.value ?? "")) }
                return self.answer
            }
        }

        /// The keys purged so far, each once.
        var keys: Set<String> { sent.withLock { Set($0.flatMap { $0.keys.split(separator: " ").map(String.init) }) } }

        /// Waits (up to 2 s) until `wanted` were all purged.
        func waitFor(_ wanted: Set<String>) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < deadline {
                if wanted.isSubset(of: keys) { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return wanted.isSubset(of: keys)
        }
    }

    static func service(purgingWith recorder: Recorder? = nil) async throws -> TabService {
        try await ServiceHarness.inProcess { configuration in
            if let recorder {
                configuration.purgeURLs = ["http://cache-a.test/", "http://cache-b.test/"]
                configuration.purgeSender = recorder.send
            }
        }
    }

    static let json = [("Content-Type", "application/json")]

    @Test func tabsAnswersNameTheAccountAndEnvironment() async throws {
        let service = try await Self.service()
        let ok = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs"))
        #expect(ok.status == 200)
        #expect(ok.header("Surrogate-Key") == "tabs:jack tabs:jack:production tabs-environment:production")
        #expect(ok.header("Cache-Tag") == "tabs:jack,tabs:jack:production,tabs-environment:production")
        // A 304 repeats them (a cache that revalidates keeps its copy indexed).
        let etag = try #require(ok.header("ETag"))
        let notModified = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("If-None-Match", etag)]))
        #expect(notModified.status == 304 && notModified.header("Surrogate-Key") == ok.header("Surrogate-Key"))
    }

    @Test func anAccountServedDefaultIsKeyedByDefaultToo() async throws {
        let service = try await Self.service()
        let ok = await service.respond(to: TestRequest(.get, "/v1/accounts/nolayout/tabs"))
        #expect(ok.status == 200)
        #expect(
            ok.header("Surrogate-Key")
                == "tabs:nolayout tabs:nolayout:production tabs:default tabs:default:production tabs-environment:production")
        // Its representation is default's: default's own answer keeps default's keys.
        let own = await service.respond(to: TestRequest(.get, "/v1/accounts/default/tabs"))
        #expect(own.header("Surrogate-Key") == "tabs:default tabs:default:production tabs-environment:production")
    }

    @Test func theManifestNamesItsKeys() async throws {
        let service = try await Self.service()
        let manifest = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/manifest"))
        #expect(manifest.status == 200)
        #expect(manifest.header("Surrogate-Key") == "tabs:jack tabs:jack:production tabs-environment:production")
        let etag = try #require(manifest.header("ETag"))
        let again = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs/manifest", headers: [("If-None-Match", etag)]))
        #expect(again.status == 304 && again.header("Cache-Tag") == "tabs:jack,tabs:jack:production,tabs-environment:production")
    }

    @Test func aVersionByNumberCarriesOnlyTheAccountWideKey() async throws {
        let service = try await Self.service()
        let layout = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/layout", headers: ServiceHarness.admin()))
        let version = try #require(layout.header("Layout-Version"))
        let pinned = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("version", version)]))
        #expect(pinned.status == 200 && pinned.header("Surrogate-Key") == "tabs:jack")
    }

    @Test func keysPurgedPerEvent() {
        func event(_ affected: Set<String>?, _ environment: String = "production") -> ChangeEvent {
            var event = ChangeEvent(
                kind: .layout, account: "a", locale: nil, version: 1, etag: "", author: nil, atMillis: 0, deleted: false, sequence: 0,
                affected: affected)
            event.environment = environment
            return event
        }
        #expect(CacheKeys.purged(by: [event(["jack", "jill"])]) == ["tabs:jack:production", "tabs:jill:production"])
        #expect(CacheKeys.purged(by: [event(nil, "staging")]) == ["tabs-environment:staging"])
        #expect(CacheKeys.purged(by: [event([])]).isEmpty)  // a change request filed moves nothing
        #expect(CacheKeys.purged(by: [event(["jack"]), event(["jack"])]) == ["tabs:jack:production"])
    }

    @Test func aWriteAndEveryRolloutChangePurgeEveryTarget() async throws {
        let recorder = Recorder()
        let service = try await Self.service(purgingWith: recorder)
        let admin = ServiceHarness.admin(Self.json)
        let first = await service.respond(
            to: TestRequest(.put, "/v1/accounts/purged/layout", headers: admin + [("If-None-Match", "*")], body: document(["Home"])))
        #expect(first.status == 201)
        #expect(await recorder.waitFor(["tabs:purged:production"]))
        #expect(Set(recorder.sent.withLock { $0.map(\.url) }) == ["http://cache-a.test/", "http://cache-b.test/"])

        // A rollout's start and its rollback each purge the account.
        let draft = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/purged/layout", query: [("publish", "false")],
                headers: admin + [("If-Match", first.header("ETag") ?? "")], body: document(["Home", "Search"])))
        let version = try #require((try JSONSerialization.jsonObject(with: Data(draft.body)) as? [String: Any])?["version"] as? Int)
        recorder.sent.withLock { $0 = [] }
        let started = await service.respond(
            to: TestRequest(
                .post, "/v1/accounts/purged/layout/rollout", headers: admin + [("If-Match", first.header("ETag") ?? "")],
                body: Array(#"{"version": \#(version), "percent": 10}"#.utf8)))
        #expect(started.status == 201)
        #expect(await recorder.waitFor(["tabs:purged:production"]))
        recorder.sent.withLock { $0 = [] }
        let rolledBack = await service.respond(
            to: TestRequest(.post, "/v1/accounts/purged/layout/rollout/rollback", headers: admin, body: Array("{}".utf8)))
        #expect(rolledBack.status == 200)
        #expect(await recorder.waitFor(["tabs:purged:production"]))
        let metrics = String(decoding: await service.respond(to: TestRequest(.get, "/metrics")).body, as: UTF8.self)
        #expect(metrics.contains("tabserver_cache_purges_total{result=\"failed\"} 0"))
    }

    @Test func aChangeToDefaultPurgesTheLayoutsExtendingIt() async throws {
        let recorder = Recorder()
        let service = try await Self.service(purgingWith: recorder)
        let admin = ServiceHarness.admin(Self.json)
        let current = await service.respond(to: TestRequest(.get, "/v1/accounts/default/layout", headers: admin))
        let written = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/default/layout", headers: admin + [("If-Match", current.header("ETag") ?? "")],
                body: document(["Changed"])))
        #expect(written.status == 200, "\(String(decoding: written.body, as: UTF8.self))")
        // john extends default (configs/layouts); an account without a layout is keyed tabs:default:… itself.
        #expect(await recorder.waitFor(["tabs:default:production", "tabs:john:production"]))
    }

    @Test func aFailedPurgeIsCountedAndTheWriteAnsweredAnyway() async throws {
        let recorder = Recorder(answer: .noAnswer("refused"))
        let service = try await Self.service(purgingWith: recorder)
        let written = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/failing/layout", headers: ServiceHarness.admin(Self.json) + [("If-None-Match", "*")],
                body: document(["Home"])))
        #expect(written.status == 201)
        #expect(await recorder.waitFor(["tabs:failing:production"]))
        let deadline = ContinuousClock.now + .seconds(2)
        var metrics = ""
        while ContinuousClock.now < deadline {
            metrics = String(decoding: await service.respond(to: TestRequest(.get, "/metrics")).body, as: UTF8.self)
            if metrics.contains("tabserver_cache_purges_total{result=\"failed\"} 2") { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(metrics.contains("tabserver_cache_purges_total{result=\"failed\"} 2"))
    }

    /// A cache that records each request's method and `Surrogate-Key` and answers 200.
    final class PurgeReceiver: HTTPHandler {
        let received = Mutex<[(method: String, keys: String)]>([])

        func handle(_ request: borrowing HTTPRequest) -> HTTPReply {
            let keys = request.header("Surrogate-Key") ?? ""
            received.withLock { $0.append((request.method.token, keys)) }
            return .response(HTTPResponse(status: 200))
        }

        func reject(_ violation: RequestLimitViolation) -> HTTPResponse { HTTPResponse(status: 400) }
    }

    @Test func overASocketAWriteSendsPurgeWithItsKeys() async throws {
        let receiver = PurgeReceiver()
        let cache = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), handler: receiver)
        defer { cache.stop() }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = ServiceConfiguration(adminTokens: [("tester", ServiceHarness.token)])
        configuration.purgeURLs = ["http://127.0.0.1:\(cache.port)/"]
        let service = try await TabService(store: MemoryStore(), configuration: configuration, logger: logger)
        let written = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/live/layout", headers: ServiceHarness.admin(Self.json) + [("If-None-Match", "*")],
                body: document(["Home"])))
        #expect(written.status == 201)
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline, receiver.received.withLock({ $0.isEmpty }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        let received = receiver.received.withLock { $0 }
        #expect(received.count == 1 && received.first?.method == "PURGE" && received.first?.keys == "tabs:live:production")
    }
}
