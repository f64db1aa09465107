import Foundation
import Logging
import TabStore
import TabTime
import TabWebhooks
import Testing

@testable import TabService

/// The access and webhook route collections over a memory store, run in process by a router of their own: no
/// service, no snapshot, nothing in the background (Hummingbird's `.router` test framework idea).
package struct CollectionHarness {
    package let store = MemoryStore()
    package let router: Router
    package let audit: AuditLog
    package let directory: TokenDirectory

    /// - Parameters:
    ///   - bootstrap: the bootstrap admin token (`tester`), nil for none.
    ///   - clock: what tokens' expiry, the audit log and the webhooks read the time from (a test moves its own).
    package init(
        bootstrap: String? = ServiceHarness.token, environments: [String] = ["production"], webhookPolicy: AddressPolicy = AddressPolicy(),
        clock: TimeSource = .system
    ) {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let credentials = Credentials(tokens: bootstrap.map { [("tester", $0)] } ?? [], clock: clock, logger: logger)
        audit = AuditLog(store: store, addresses: ClientAddresses(), metrics: Metrics(), logger: logger, clock: clock)
        directory = credentials.directory
        let access = AccessRoutes(
            store: store, directory: credentials.directory, bootstrap: credentials.bootstrapTokens, audit: audit,
            environments: environments, failures: .ignored, logger: logger, now: { clock.date })
        let outbox = WebhookWorker(store: store, policy: webhookPolicy, resolver: SystemResolver(), logger: logger, clock: clock)
        let webhooks = WebhookRoutes(
            store: store, policy: webhookPolicy, resolver: SystemResolver(), outbox: outbox, audit: audit, failures: .ignored,
            now: { clock.date })
        let gate = AccessGate(
            credentials: credentials, audit: audit, store: store, entryEnvironment: environments.first ?? "production", logger: logger)
        router = Router([access, webhooks], gate: gate, logger: logger)
    }

    package func respond(to request: TestRequest) async -> TestResponse { await router.respond(to: request) }

    package static let admin = [("Authorization", "Bearer \(ServiceHarness.token)")]

    package static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// The answer's body as a JSON object (empty when it is none).
    package static func object(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    /// Makes a token through the API with `headers` (the bootstrap token by default); returns its id and secret.
    package func makeToken(_ body: String, headers: [(String, String)] = CollectionHarness.admin) async throws -> (
        id: String, secret: String
    ) {
        let answer = await respond(
            to: TestRequest(.post, "/v1/tokens", headers: headers + [("Content-Type", "application/json")], body: Array(body.utf8)))
        try #require(answer.status == 201, "\(answer.text)")
        let json = Self.object(answer)
        return (try #require(json["id"] as? String), try #require(json["token"] as? String))
    }

    /// The audit log's entries as the bootstrap admin reads them.
    package func auditEntries() async throws -> [[String: Any]] {
        let answer = await respond(to: TestRequest(.get, "/v1/audit", headers: Self.admin))
        try #require(answer.status == 200, "\(answer.text)")
        return Self.object(answer)["entries"] as? [[String: Any]] ?? []
    }
}
