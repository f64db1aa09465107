import Foundation
import Logging
import TabDelivery
import TabStore
import TabTime
import TabWebhooks

/// What the service is made of, and the one place its request path is wired: the components made from a store and a
/// ``ServiceConfiguration``, the write commands over them, the route collections and the access gate made of those,
/// and a router over every collection or some. ``TabService`` is made of one; an in-process test makes one over the
/// store and configuration it chooses (a memory store, a fixed clock, a snapshot of its own) and routes the
/// collections it wants, without repeating the wiring. Making one starts nothing in the background.
struct ServiceParts: Sendable {
    let store: any TabStore
    let configuration: ServiceConfiguration
    /// What the service reads the time from (``ServiceConfiguration/clock``), and hands to its collections.
    let clock: TimeSource
    let logger: Logger
    /// ``ServiceConfiguration/environments`` checked.
    let environments: EnvironmentList
    let metrics = Metrics()
    let credentials: Credentials
    /// The audit log: changes' entries, refusals, pruning.
    let audit: AuditLog
    let budget: VariantBudget
    let publisher: Publisher
    let webhookWorker: WebhookWorker
    /// The apps' reports: per-address limits, the guards to evaluate, their metrics.
    let reportLedger: ReportLedger
    /// Manifests made for the current snapshot (see ``ManifestMemo``).
    let manifests: ManifestMemo
    let heldBudget: HeldRequestBudget
    /// The declared app builds (see ``BuildRegistry``).
    let builds = BuildRegistry()
    let builder = VariantBuilder()
    /// Answers to repeated reads (see ``ReadMemo``).
    let readMemo = ReadMemo()
    /// The versions environments served before, for `?version=N` and a build's earlier version.
    let servedHistory = ServedHistory()
    /// The answers of held long-polls, shared by the polls one change wakes (see ``LongPollResponses``).
    let longPolls = LongPollResponses()
    /// This replica's answers per rollout arm.
    let armCounts = ArmCountsRegistry()
    /// Names this replica's rows of answer counts in a shared store.
    let replicaID = StoredWebhook.newID()
    let console = ConsoleFiles.load()
    let requestIDs = RequestIDs()

    /// Makes every component, with the first snapshot loaded from `store`.
    /// - Throws: ``StoreError`` when the store cannot be read.
    init(store: any TabStore, configuration: ServiceConfiguration, logger: Logger) async throws(StoreError) {
        let budget = VariantBudget(limit: configuration.variantCacheBytes)
        let first = try await Snapshot.load(
            from: store, environments: Self.environments(configuration), budget: budget, logger: logger)
        self.init(store: store, configuration: configuration, logger: logger, budget: budget, firstSnapshot: first)
    }

    /// Makes every component, serving `firstSnapshot` (built over `budget`) first: a test's snapshot of its own.
    init(store: any TabStore, configuration: ServiceConfiguration, logger: Logger, budget: VariantBudget, firstSnapshot: Snapshot) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.budget = budget
        clock = configuration.clock
        environments = Self.environments(configuration)
        credentials = Credentials(
            tokens: configuration.adminTokens, failureLimit: configuration.authFailuresPerMinute, clock: configuration.clock,
            logger: logger)
        audit = AuditLog(
            store: store,
            addresses: ClientAddresses(trustedProxies: configuration.trustedProxies, forwardedHeader: configuration.forwardedHeader),
            metrics: metrics, logger: logger, clock: configuration.clock)
        manifests = ManifestMemo(fallbackLimit: max(2, configuration.maxFallbackManifests))
        heldBudget = HeldRequestBudget(total: configuration.heldRequestLimit, perAddress: configuration.heldRequestsPerAddress)
        reportLedger = ReportLedger(
            limits: ReportLimits(
                installsPerAddress: configuration.reportInstallsPerAddress, requestsPerMinute: configuration.reportRequestsPerMinute,
                rowsPerArm: configuration.reportRowsPerArm, retentionDays: configuration.reportRetentionDays))
        publisher = Publisher(
            firstSnapshot,
            purger: configuration.purgeURLs.isEmpty
                ? nil : CachePurger(targets: configuration.purgeURLs, metrics: metrics, logger: logger, send: configuration.purgeSender))
        webhookWorker = WebhookWorker(
            store: store, policy: configuration.webhookPolicy, resolver: configuration.webhookResolver, logger: logger,
            retention: .seconds(configuration.webhookRetentionDays * 86_400), clock: configuration.clock)
    }

    /// ``ServiceConfiguration/environments`` checked (`production` alone when they are not a valid list).
    static func environments(_ configuration: ServiceConfiguration) -> EnvironmentList {
        (try? EnvironmentList(parsing: configuration.environments.joined(separator: ","))) ?? .default
    }

    /// The write commands, of what they need; `failures` hears of the store's failures.
    func makeChanges(failures: StoreFailures) -> Changes {
        Changes(
            store: store, publisher: publisher, environments: environments, approvals: configuration.approvals, builds: builds,
            buildLiveDays: configuration.buildLiveDays, budget: budget, outbox: webhookWorker, armCounts: armCounts, replicaID: replicaID,
            metrics: metrics, failures: failures, clock: clock, logger: logger, maxBuilds: configuration.maxBuilds)
    }

    /// Every route collection, each made of what it needs.
    /// - Parameters:
    ///   - changes: the write commands (``makeChanges(failures:)``).
    ///   - failures: hears of the store's failures.
    ///   - isStopping: what `/readyz` reads (the service's ``TabService/isStopping``).
    ///   - capabilityMetrics: what `/metrics` adds after the collections' lines.
    func collections(
        changes: Changes, failures: StoreFailures, isStopping: @escaping @Sendable () -> Bool = { false },
        capabilityMetrics: @escaping @Sendable () -> String = { "" }
    ) -> ServiceCollections {
        let now: @Sendable () -> Date = { [clock] in clock.date }
        return ServiceCollections(
            management: ManagementRoutes(changes: changes), rollouts: RolloutRoutes(changes: changes, audit: audit),
            reports: ReportRoutes(changes: changes, ledger: reportLedger, addresses: audit.addresses),
            builds: BuildRoutes(changes: changes), changeRequests: ChangeRequestRoutes(changes: changes),
            clientPlane: ClientPlaneRoutes(
                publisher: publisher, store: store, environments: environments, budget: budget, metrics: metrics, builds: builds,
                builder: builder, readMemo: readMemo, manifests: manifests, servedHistory: servedHistory, heldBudget: heldBudget,
                longPolls: longPolls, addresses: audit.addresses, cacheControl: configuration.cacheControl,
                maxWaitSeconds: configuration.maxWaitSeconds, manifestMaxAgeSeconds: configuration.manifestMaxAgeSeconds,
                signer: configuration.signer, failures: failures, logger: logger, clock: clock),
            access: AccessRoutes(
                store: store, directory: credentials.directory, bootstrap: credentials.bootstrapTokens, audit: audit,
                environments: configuration.environments, failures: failures, logger: logger, now: now),
            webhooks: WebhookRoutes(
                store: store, policy: configuration.webhookPolicy, resolver: configuration.webhookResolver, outbox: webhookWorker,
                audit: audit, failures: failures, now: now),
            operations: OperationsRoutes(
                store: store, publisher: publisher, metrics: metrics, budget: budget, console: console, isStopping: isStopping,
                capabilityMetrics: capabilityMetrics))
    }

    /// The access gate every scoped route passes: the tokens, the audit log of refusals, the entry environment.
    func gate() -> AccessGate {
        AccessGate(credentials: credentials, audit: audit, store: store, entryEnvironment: environments.entry.text, logger: logger)
    }

    /// The service's dispatcher: the whole route table, each handler bound to its collection, counted in ``metrics``.
    func router(_ collections: ServiceCollections) -> Router {
        Router(
            table: TabService.routeTable, handlers: TabService.routeSections.flatMap { $0.bind(collections) }, gate: gate(),
            metrics: metrics, logger: logger, requestIDs: requestIDs, errorCacheControl: configuration.errorCacheControl, clock: clock)
    }

    /// A dispatcher over some of the collections alone (a table of their routes, in the order given, counted in
    /// metrics of its own): what a test of those collections runs; any other route is 404.
    func router(_ collections: ServiceCollections, only sections: [RouteSection]) -> Router {
        let table = RouteTable(sections.flatMap(\.endpoints))
        return Router(
            table: table, handlers: sections.flatMap { $0.bind(collections) }, gate: gate(), metrics: Metrics(labels: table.labels),
            logger: logger, requestIDs: requestIDs, errorCacheControl: configuration.errorCacheControl, clock: clock)
    }

    /// A dispatcher over collections that are not the service's (a test's probe), behind this service's gate.
    func router(over collections: [any RouteCollection]) -> Router {
        Router(collections, gate: gate(), logger: logger, errorCacheControl: configuration.errorCacheControl, clock: clock)
    }
}
