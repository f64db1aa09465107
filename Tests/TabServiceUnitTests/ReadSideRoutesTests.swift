import Foundation
import Logging
import TabDelivery
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

/// The client plane and operations collections over a snapshot of their own, run in process by a router of their own
/// (``ServiceParts/router(_:only:)``): no service, nothing in the background.
struct ReadSideHarness {
    let store = MemoryStore()
    let publisher: Publisher
    let router: Router
    /// The instant the harness's clock stays at.
    static let instant = Timestamp(unixMillis: 1_700_000_000_123)

    /// `jack` and `default` with a layout each, served in `production`.
    /// - Parameter stopping: what `/readyz` is told about the service stopping.
    init(stopping: Bool = false) {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let layouts = SnapshotTests()
        let budget = VariantBudget(limit: .max)
        var configuration = ServiceConfiguration()
        configuration.heldRequestLimit = 10
        configuration.heldRequestsPerAddress = 10
        configuration.clock = .fixed(Self.instant)
        let parts = ServiceParts(
            store: store, configuration: configuration, logger: logger, budget: budget,
            firstSnapshot: Snapshot.build(
                layouts: [
                    layouts.record("jack", version: 1, layouts.layout("home")), layouts.record("default", version: 1, layouts.layout("d")),
                ],
                strings: [], budget: budget, logger: logger))
        publisher = parts.publisher
        router = parts.router(
            parts.collections(
                changes: parts.makeChanges(failures: .ignored), failures: .ignored, isStopping: { stopping },
                capabilityMetrics: { "# the other capabilities' lines\n" }),
            only: [.collection(\.clientPlane), .collection(\.operations)])
    }

    func respond(to request: TestRequest) async -> TestResponse { await router.respond(to: request) }
}

/// The read side's routes through their collections' own router, in process and without a service (over a socket, with
/// the read memo in front: `ReadPathTests`, `ReadMemoTests`, `ManifestLiveTests`, `StartupProbeTests`).
@Suite struct ReadSideRoutesTests {
    /// A cold start behind a load balancer: every phone's first request for one layout arrives before its variant is
    /// built. They share one build and all get the layout (before, all but the first four got 503).
    @Test func aHerdOfFirstRequestsForOneVariantSharesItsBuild() async {
        let harness = ReadSideHarness()
        let request = TestRequest(
            .get, "/v1/accounts/jack/tabs", headers: [("Accept-Language", "fr-FR,fr;q=0.9"), ("Accept-Encoding", "gzip")])
        let answers = await withTaskGroup(of: TestResponse.self) { group in
            for _ in 0..<64 { group.addTask { await harness.respond(to: request) } }
            return await group.reduce(into: [TestResponse]()) { $0.append($1) }
        }
        #expect(answers.filter { $0.status != 200 }.map(\.status) == [])
        #expect(Set(answers.compactMap { $0.header("ETag") }).count == 1, "one variant, one tag")
    }

    @Test func tabsAnswers200Then304ForItsETag() async throws {
        let harness = ReadSideHarness()
        let first = await harness.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Encoding", "identity")]))
        #expect(first.status == 200, "\(first.text)")
        let etag = try #require(first.header("ETag"))
        #expect(first.header("Content-Type") == "application/json" && first.header("Cache-Control") == "no-cache")
        #expect(first.header("Request-Id") == nil, "a representation carries no per-request header")
        let tabs = try #require(CollectionHarness.object(first)["tabs"] as? [[String: Any]])
        #expect(tabs.map { $0["id"] as? String } == ["home"])

        let again = await harness.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Encoding", "identity"), ("If-None-Match", etag)]))
        #expect(again.status == 304 && again.header("ETag") == etag)
        let stale = await harness.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Encoding", "identity"), ("If-None-Match", "\"other\"")]))
        #expect(stale.status == 200)
        // An account without a layout of its own gets default's.
        let fallback = await harness.respond(to: TestRequest(.get, "/v1/accounts/jill/tabs"))
        #expect((CollectionHarness.object(fallback)["tabs"] as? [[String: Any]])?.map { $0["id"] as? String } == ["d"])
        #expect(await harness.respond(to: TestRequest(.get, "/v1/accounts/no%20such/tabs")).status == 400)
    }

    @Test func theManifestIsTheSameBytesForEveryInstallAndRevalidates() async throws {
        let harness = ReadSideHarness()
        let path = "/v1/accounts/jack/tabs/manifest"
        let first = await harness.respond(to: TestRequest(.get, path, headers: [("X-Install-Id", "one")]))
        #expect(first.status == 200)
        let manifest = CollectionHarness.object(first)
        #expect(manifest["account"] as? String == "jack" && manifest["layout"] as? String == "jack")
        #expect((manifest["stable"] as? [String: Any])?["version"] as? Int == 1 && manifest["rollout"] is NSNull)
        // `rollout` stands as null; `revoked` only when a version is revoked.
        #expect(manifest.keys.sorted() == ["account", "environment", "layout", "revision", "rollout", "stable"])
        #expect(first.header("Cache-Control") == "public, max-age=30")
        let etag = try #require(first.header("ETag"))
        let other = await harness.respond(to: TestRequest(.get, path, headers: [("X-Install-Id", "two")]))
        #expect(other.body == first.body && other.header("ETag") == etag)
        let revalidated = await harness.respond(to: TestRequest(.get, path, headers: [("If-None-Match", etag)]))
        #expect(revalidated.status == 304 && revalidated.header("ETag") == etag)
    }

    @Test func aBundleIsDatedByTheCollectionsClock() async throws {
        let harness = ReadSideHarness()
        let bundle = await harness.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/bundle"))
        #expect(bundle.status == 200, "\(bundle.text)")
        #expect(CollectionHarness.object(bundle)["generatedAt"] as? String == ReadSideHarness.instant.rfc3339)
    }

    @Test func healthzAndReadyzAnswerFromWhatTheCollectionHolds() async throws {
        let harness = ReadSideHarness()
        let health = await harness.respond(to: TestRequest(.get, "/healthz"))
        #expect(health.status == 200 && health.text == #"{"status":"ok"}"#)
        let ready = await harness.respond(to: TestRequest(.get, "/readyz"))
        #expect(ready.status == 200 && ready.text == #"{"layouts":2,"status":"ready","store":"up"}"#, "\(ready.text)")
        let stopping = await ReadSideHarness(stopping: true).respond(to: TestRequest(.get, "/readyz"))
        #expect(stopping.status == 503 && stopping.header("Content-Type") == "application/problem+json")
    }

    @Test func openAPIAndMetricsAreServed() async throws {
        let harness = ReadSideHarness()
        let document = await harness.respond(to: TestRequest(.get, "/openapi.yaml"))
        #expect(document.status == 200 && document.header("Content-Type") == "application/yaml")
        #expect(document.text == OpenAPIDocument.yaml)
        let metrics = await harness.respond(to: TestRequest(.get, "/metrics"))
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("tabserver_snapshot_sequence 1\n"))
        #expect(metrics.text.hasSuffix("tabserver_snapshot_sequence 1\n# the other capabilities' lines\n"))
    }
}
