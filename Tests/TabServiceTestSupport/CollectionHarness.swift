import Foundation
import Logging
import TabStore
import TabTime
import TabWebhooks
import Testing

@testable import TabService

/// The access and webhook route collections over a memory store, run in process by a router of their own
/// (``ServiceParts/router(_:only:)``): no service, nothing in the background (Hummingbird's `.router` test framework
/// idea).
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
        var configuration = ServiceConfiguration(adminTokens: bootstrap.map { [("tester", $0)] } ?? [])
        configuration.environments = environments
        configuration.webhookPolicy = webhookPolicy
        configuration.clock = clock
        let parts = ServiceParts.withoutLayouts(store: store, configuration: configuration, logger: logger)
        audit = parts.audit
        directory = parts.credentials.directory
        router = parts.router(
            parts.collections(changes: parts.makeChanges(failures: .ignored), failures: .ignored),
            only: [.collection(\.access), .collection(\.webhooks)])
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
