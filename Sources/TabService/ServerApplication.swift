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
    /// - Parameter beforeListening: called just before the port is bound (`serve` stops its start-up probes there).
    /// - Throws: what reading the configs, the store or starting the daemon throws.
    public init(
        store: any TabStore, configs: String?, service configuration: ServiceConfiguration, http: HTTPServerConfiguration,
        logger: Logger, beforeListening: () -> Void = {}
    ) async throws {
        if let configs {
            let report = try await ConfigsDirectory.load(configs).importInto(
                store, force: false, environments: configuration.environments)
            logger.info("configs \(configs): imported \(report.imported.count), kept the store's \(report.skipped.count)")
            for refusal in report.refused { logger.error("configs: not imported: \(refusal)") }
        }
        var configuration = configuration
        (configuration.heldRequestLimit, configuration.heldRequestsPerAddress) = Self.heldRequestLimits(
            http, total: configuration.heldRequestLimit, perAddress: configuration.heldRequestsPerAddress)
        service = try await TabService(store: store, configuration: configuration, logger: logger)
        if service.console.isEmpty {
            logger.warning("the web console has no files (this build carries none): /console/ answers 404")
        } else if case .directory(let directory) = service.console.origin {
            logger.info("the web console is served from TABSERVER_CONSOLE_DIR (\(directory)), not from the binary")
        }
        beforeListening()
        server = try HTTPServer(configuration: http, handler: service)
    }

    /// The long-polls that may be held, lowered to leave an eighth of the connection limit (at least 64 slots)
    /// free for everything else, and per address to the per-address share of connections less 16 (when there is
    /// one), so that neither all clients' held requests nor one client's can take the last slots. A `perAddress` of
    /// 0 (no limit per address: behind a balancer that hides client addresses) stays 0; only the total binds then.
    public static func heldRequestLimits(_ http: HTTPServerConfiguration, total: Int, perAddress: Int) -> (total: Int, perAddress: Int) {
        let connections = http.effectiveConnectionLimit
        let total = max(1, min(total, connections - max(64, connections / 8)))
        guard perAddress > 0 else { return (total, 0) }
        var perAddress = min(perAddress, total)
        if http.perIPConnectionLimit > 0 { perAddress = max(1, min(perAddress, http.perIPConnectionLimit - 16)) }
        return (total, perAddress)
    }

    /// The port the server listens on.
    public var port: UInt16 { server.port }

    /// Stops gracefully: held long-polls answer at once, requests in flight finish within the grace.
    public func stop() { server.stop() }
}
