import Foundation
import Logging
import MicroHTTPD
import TabConfigs
import TabReview
import TabService
import TabSigning
import TabStore
import TabTestSupport
import TabWebhooks

/// A live service on 127.0.0.1, port 0, with the repository's `configs/` imported into `store`.
package struct ServiceHarness {
    package static let token = "test-admin-token-0123456789"
    package static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    package let application: ServerApplication
    package let store: any TabStore

    package var service: TabService { application.service }
    package var server: HTTPServer { application.server }
    package var port: UInt16 { application.port }

    package init(
        store: any TabStore = MemoryStore(),
        configuration: HTTPServerConfiguration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2),
        variantCacheBytes: Int = 512 << 20, webhookPolicy: AddressPolicy = AddressPolicy(), webhookDeliveries: Bool = true,
        environments: [String] = ["production"], signer: Signer? = nil, approvals: [String] = [], reportInstallsPerAddress: Int = 100,
        maxFallbackManifests: Int = 10_000
    )
        async throws
    {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        self.store = store
        application = try await ServerApplication(
            store: store, configs: Self.repository.appendingPathComponent("configs").path,
            service: {
                var service = ServiceConfiguration(adminTokens: [("tester", Self.token)], variantCacheBytes: variantCacheBytes)
                service.webhookPolicy = webhookPolicy
                service.webhookDeliveries = webhookDeliveries
                service.environments = environments
                service.signer = signer
                service.reportInstallsPerAddress = reportInstallsPerAddress
                service.maxFallbackManifests = maxFallbackManifests
                for item in approvals { try? service.approvals.add(item) }
                return service
            }(),
            http: configuration, logger: logger)
    }

    package func client() -> HTTPTestClient { HTTPTestClient(port: port) }

    /// The service alone, in process (no server, no socket): over `store`, with the repository's `configs/` imported
    /// first unless `importingConfigs` is false, the admin token ``token`` and what `configure` sets. The one place
    /// the in-process suites make their service.
    package static func inProcess(
        store: MemoryStore = MemoryStore(), importingConfigs: Bool = true, _ configure: (inout ServiceConfiguration) -> Void = { _ in }
    ) async throws -> TabService {
        if importingConfigs {
            _ = try await ConfigsDirectory.load(repository.appendingPathComponent("configs").path).importInto(store, force: false)
        }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = ServiceConfiguration(adminTokens: [("tester", token)])
        configure(&configuration)
        return try await TabService(store: store, configuration: configuration, logger: logger)
    }

    package static func admin(_ extra: [(String, String)] = []) -> [(String, String)] {
        [("Authorization", "Bearer \(token)")] + extra
    }
}

/// A layout of one tab per title (ids `t0`, `t1`, …), as a request body.
package func document(_ titles: [String]) -> [UInt8] {
    let tabs = titles.enumerated().map {
        #"{"id":"t\#($0.offset)","title":"\#($0.element)","rootViewController":"T\#($0.offset)ViewController"}"#
    }
    return Array(#"{"schemaVersion":1,"tabs":[\#(tabs.joined(separator: ","))]}"#.utf8)
}
