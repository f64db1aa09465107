import Logging
import MicroHTTPD
import TabConfigs
import TabStore

/// The service wired to its HTTP server: configs imported, the first snapshot built, the daemon listening.
/// `tabserver serve` and the tests' live harness both start exactly this.
public final class ServerApplication: Sendable {
    public let service: TabService
    public let server: HTTPServer

    /// Imports `configs` (accounts and locales the store lacks), builds the first snapshot and starts listening.
    /// - Throws: what reading the configs, the store or starting the daemon throws.
    public init(
        store: any TabStore, configs: String?, service configuration: ServiceConfiguration, http: HTTPServerConfiguration,
        logger: Logger
    ) async throws {
        if let configs {
            let report = try await ConfigsDirectory.load(configs).importInto(store, force: false)
            logger.info("configs \(configs): imported \(report.imported.count), kept the store's \(report.skipped.count)")
            for refusal in report.refused { logger.error("configs: not imported: \(refusal)") }
        }
        service = try await TabService(store: store, configuration: configuration, logger: logger)
        if service.console.isEmpty {
            logger.warning("the web console's files were not found (set TABSERVER_CONSOLE_DIR): /console/ answers 404")
        }
        server = try HTTPServer(configuration: http, handler: service)
    }

    /// The port the server listens on.
    public var port: UInt16 { server.port }

    /// Stops gracefully: held long-polls answer at once, requests in flight finish within the grace.
    public func stop() { server.stop() }
}
