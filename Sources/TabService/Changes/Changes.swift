import Logging
import MicroHTTPD
import TabDelivery
import TabLayout
import TabReview
import TabStore
import TabTime

/// The service's write commands, one value shared by the collections that change what is served (management,
/// rollouts and promotion, builds, change requests): each command stores its change through the store (its audit
/// entry and webhook deliveries in the same transaction), then publishes it; in a protected environment it holds
/// the change for review instead (``run(_:)`` alone decides), and a change request's apply runs the ``HeldCommand``
/// it holds.
final class Changes: Sendable {
    let store: any TabStore
    let publisher: Publisher
    /// The environments: where changes enter (the first), the one apps get (the last).
    let environments: EnvironmentList
    /// The environments whose changes wait for approvals.
    let approvals: ApprovalPolicy
    /// The declared app builds this replica knows (shared with the read path).
    let builds: BuildRegistry
    /// The declared builds' limits: the days one stays live after it was declared or last seen, and the most declared
    /// at once (`--max-builds`).
    let buildLiveDays, maxBuilds: Int
    /// The compiled-representation cache's budget (emptied when the builds' declarations change).
    let budget: VariantBudget
    /// Poked after a commit: the write committed its webhook deliveries with it.
    let outbox: WebhookWorker
    /// This replica's answers per rollout arm.
    let armCounts: ArmCountsRegistry
    /// Names this replica when it claims a change request to apply.
    let replicaID: String
    let metrics: Metrics
    let failures: StoreFailures
    let clock: TimeSource
    let logger: Logger

    init(
        store: any TabStore, publisher: Publisher, environments: EnvironmentList, approvals: ApprovalPolicy, builds: BuildRegistry,
        buildLiveDays: Int, budget: VariantBudget, outbox: WebhookWorker, armCounts: ArmCountsRegistry, replicaID: String,
        metrics: Metrics, failures: StoreFailures, clock: TimeSource, logger: Logger, maxBuilds: Int = 1_000
    ) {
        self.store = store
        self.publisher = publisher
        self.environments = environments
        self.approvals = approvals
        self.builds = builds
        self.buildLiveDays = buildLiveDays
        self.maxBuilds = maxBuilds
        self.budget = budget
        self.outbox = outbox
        self.armCounts = armCounts
        self.replicaID = replicaID
        self.metrics = metrics
        self.failures = failures
        self.clock = clock
        self.logger = logger
    }

    /// The snapshot of one environment.
    func snapshot(for environment: EnvironmentName) -> Snapshot { publisher.snapshot(for: environment, served: environments.served) }

    /// Publishes a change to one environment's snapshot (see ``Publisher/publish(in:served:_:)``).
    @discardableResult
    func publish(in environment: EnvironmentName, _ change: @escaping @Sendable (Snapshot) -> (Snapshot, [ChangeEvent])?) async -> Snapshot
    {
        await publisher.publish(in: environment, served: environments.served, change)
    }

    /// The answer to a store failure: refused preconditions as 428/412/404, the rest 503 (details in the log only).
    func storeProblem(_ error: StoreError) -> HTTPResponse { failures.problem(error).response }

    /// The approvals a change to `environment` waits for; nil when it goes through at once.
    func reviewRequired(in environment: EnvironmentName, _ options: WriteOptions) -> Int? {
        options.bypassApproval ? nil : approvals.approvals(for: environment.text)
    }
}
