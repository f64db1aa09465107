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

/// The write side's collections (management, rollouts, builds, change requests) over one ``Changes`` and a memory
/// store, run in process by a router of their own: no service, nothing in the background. The drawings and the change
/// feed, the read side's handlers, answer 404 here.
package struct WriteHarness {
    package let store = MemoryStore()
    package let changes: Changes
    package let router: Router
    /// The apps' reports' limits and guards (``ReportLedger/evaluate(_:)`` is called by the test, not a clock).
    package let ledger = ReportLedger(
        limits: ReportLimits(installsPerAddress: 0, requestsPerMinute: 0, rowsPerArm: 100_000, retentionDays: 30))

    /// Bearer tokens of admins named `tester` (``ServiceHarness/token``) and `reviewer`.
    package static let reviewer = "reviewer-token-0123456789abcdef"

    /// - Parameters:
    ///   - environments: where changes enter first, the one apps get last.
    ///   - approvals: `--require-approval` items (`production`, `production:2`).
    ///   - maxBuilds: `--max-builds`.
    package init(environments: [String] = ["production"], approvals: [String] = [], maxBuilds: Int = 1_000) async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let list = try EnvironmentList(parsing: environments.joined(separator: ","))
        var policy = ApprovalPolicy()
        for item in approvals { try policy.add(item) }
        let budget = VariantBudget(limit: 64 << 20)
        let metrics = Metrics()
        let audit = AuditLog(store: store, addresses: ClientAddresses(), metrics: metrics, logger: logger, clock: .system)
        changes = Changes(
            store: store, publisher: Publisher(try await Snapshot.load(from: store, environments: list, budget: budget, logger: logger)),
            environments: list, approvals: policy, builds: BuildRegistry(), buildLiveDays: 30, budget: budget,
            outbox: WebhookWorker(store: store, policy: AddressPolicy(), resolver: SystemResolver(), logger: logger, clock: .system),
            armCounts: ArmCountsRegistry(), replicaID: "replica-test", metrics: metrics, failures: .ignored, clock: .system, logger: logger,
            maxBuilds: maxBuilds)
        let credentials = Credentials(
            tokens: [("tester", ServiceHarness.token), ("reviewer", Self.reviewer)], clock: .system, logger: logger)
        let gate = AccessGate(credentials: credentials, audit: audit, store: store, entryEnvironment: list.entry.text, logger: logger)
        router = Router(
            [
                ManagementRoutes(changes: changes),
                RolloutRoutes(changes: changes, audit: audit), BuildRoutes(changes: changes), ChangeRequestRoutes(changes: changes),
                ReportRoutes(changes: changes, ledger: ledger, addresses: ClientAddresses()),
            ], gate: gate, logger: logger)
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
