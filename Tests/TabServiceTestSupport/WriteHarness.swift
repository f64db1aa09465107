import Foundation
import Logging
import MicroHTTPD
import TabAccess
import TabDelivery
import TabReview
import TabStore
import TabWebhooks
import Testing

@testable import TabService

/// The write side's collections (management, rollouts, builds, change requests, reports) over one ``Changes`` and a
/// memory store, run in process by a router of their own (``ServiceParts/router(_:only:)``): no service, nothing in the
/// background. The drawings and the change feed, the read side's handlers, answer 404 here.
package struct WriteHarness {
    package let store = MemoryStore()
    package let changes: Changes
    package let router: Router
    /// The apps' reports' limits and guards (``ReportLedger/evaluate(_:)`` is called by the test, not a clock): no
    /// limit per address or minute.
    package let ledger: ReportLedger

    /// Bearer tokens of admins named `tester` (``ServiceHarness/token``) and `reviewer`.
    package static let reviewer = "reviewer-token-0123456789abcdef"

    /// - Parameters:
    ///   - environments: where changes enter first, the one apps get last.
    ///   - approvals: `--require-approval` items (`production`, `production:2`).
    ///   - maxBuilds: `--max-builds`.
    package init(environments: [String] = ["production"], approvals: [String] = [], maxBuilds: Int = 1_000) async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = ServiceConfiguration(
            adminTokens: [("tester", ServiceHarness.token), ("reviewer", Self.reviewer)], variantCacheBytes: 64 << 20)
        _ = try EnvironmentList(parsing: environments.joined(separator: ","))  // a list the test got wrong throws here
        configuration.environments = environments
        for item in approvals { try configuration.approvals.add(item) }
        configuration.maxBuilds = maxBuilds
        configuration.reportInstallsPerAddress = 0
        configuration.reportRequestsPerMinute = 0
        let parts = try await ServiceParts(store: store, configuration: configuration, logger: logger)
        changes = parts.makeChanges(failures: .ignored)
        ledger = parts.reportLedger
        router = parts.router(
            parts.collections(changes: changes, failures: .ignored),
            only: [
                .collection(\.management), .collection(\.rollouts), .collection(\.builds), .collection(\.changeRequests),
                .collection(\.reports),
            ])
    }

    package func respond(to request: TestRequest) async -> TestResponse { await router.respond(to: request) }

    /// `method path` as the admin `token`, with a JSON or layout body.
    package func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], headers: [(String, String)] = [], body: [UInt8] = [],
        token: String = ServiceHarness.token
    ) async -> TestResponse {
        let type: [(String, String)] = body.isEmpty ? [] : [("Content-Type", "application/json")]
        return await respond(
            to: TestRequest(method, path, query: query, headers: [("Authorization", "Bearer \(token)")] + type + headers, body: body))
    }
}
