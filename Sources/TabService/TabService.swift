import Logging
import MicroHTTPD
import Synchronization
import TabAccess
import TabDelivery
import TabLayout
import TabReview
import TabSigning
import TabStore
import TabTime
import TabWebhooks

/// How the service behaves; only the executable reads flags and the environment to fill it.
public struct ServiceConfiguration: Sendable {
    /// `Cache-Control` of client-plane answers.
    public var cacheControl: String
    /// `Cache-Control` of client-plane errors (400, 404, 406, …), so that no shared cache keeps them.
    public var errorCacheControl: String
    /// The longest a long-poll (`?wait=N`, `Prefer: wait=N`) is held, in seconds.
    public var maxWaitSeconds: Int
    /// Admin bearer tokens and the name recorded as the author of each one's changes.
    public var adminTokens: [(name: String, token: String)]
    /// Bytes that compiled representations may hold across all layouts before the least recently used are
    /// dropped (they are compiled again when asked for).
    public var variantCacheBytes: Int
    /// Peers (IP addresses as text) whose `X-Forwarded-For` / `Forwarded: for=` names the client: behind a proxy,
    /// failed logins are counted per real client, not per proxy. Empty: the socket's peer is the client.
    public var trustedProxies: Set<String>
    /// The header the trusted proxies write the client's address in (`--forwarded-header`); the other is ignored.
    public var forwardedHeader: ForwardedHeader = .xForwardedFor
    /// Failed authentications one address may make in a minute before it is refused (429) for 30 s; 0: never.
    public var authFailuresPerMinute: Int
    /// Long-polls held at once, across all clients (503 with `Retry-After` beyond). `ServerApplication` sets it
    /// below the connection limit, so that held requests never take the slots `/healthz` and reads need.
    public var heldRequestLimit: Int = 10_000
    /// Long-polls one client address (the forwarded client behind `--trusted-proxy`) may hold at once
    /// (`--per-address-held`); 0: no limit per address, only ``heldRequestLimit``.
    public var heldRequestsPerAddress: Int = 512
    /// The environments (`--environments`), where changes enter first and the one apps get last: a client may name
    /// one (`?environment=`, `Tabs-Environment`; others are 404), writes go to the first unless they name another,
    /// and a token's `environments` may name them. `production` alone by default, where every answer is what it was
    /// before environments existed.
    public var environments: [String] = ["production"]
    /// Days the audit log keeps an entry (`--audit-retention`); older ones are pruned hourly in the background.
    public var auditRetentionDays: Int = 400
    /// New install ids one client address may bring into one rollout's reports (`--report-installs-per-address`); 0 = no limit.
    public var reportInstallsPerAddress: Int = 100
    /// Report requests per client address per minute; 0 = no limit.
    public var reportRequestsPerMinute: Int = 600
    /// Counted report rows (install × kind × tab) per rollout arm or version.
    public var reportRowsPerArm: Int = 100_000
    /// Days the counts of an ended rollout or of a version are kept after their last report (`--report-retention`).
    public var reportRetentionDays: Int = 30
    /// Days delivered and failed webhook deliveries are kept (`--webhook-retention`); pruned hourly.
    public var webhookRetentionDays: Int = 30
    /// The most entries the audit log keeps (`--audit-max-rows`); the oldest beyond are pruned each minute.
    public var auditMaxRows: Int = 1_000_000
    /// Where webhooks may deliver (`--webhook-allow-private`: `AddressPolicy.allowEverything`).
    public var webhookPolicy = AddressPolicy()
    /// How webhook hosts are resolved (checked when made and before every attempt).
    public var webhookResolver: any HostResolver = SystemResolver()
    /// The environments whose changes wait for approvals (`--require-approval ENV[:N]`).
    public var approvals = ApprovalPolicy()
    /// Days a declared build stays live after it was declared or last seen (`--build-live-days`).
    public var buildLiveDays = 30
    /// Days a change request that ended (applied, rejected, cancelled, failed) is kept (`--change-request-retention`).
    public var changeRequestRetentionDays = 90
    /// The most builds that may be declared at once (`--max-builds`); a new one past it is 409.
    public var maxBuilds = 1_000
    /// The most manifests kept for accounts served `default`'s layout (`--max-fallback-manifests`), those asked for
    /// recently; one that went is made and signed again when asked for.
    public var maxFallbackManifests = 10_000
    /// `max-age` of `…/tabs/manifest` (`--manifest-max-age`), lowered to the seconds left before a rollout's next step.
    public var manifestMaxAgeSeconds = 30
    /// Signs every 200 of `…/tabs`, `…/tabs/manifest` and every bundle entry (`--signing-key`); nil signs nothing.
    public var signer: Signer?
    /// Whether this process sends the webhook outbox: `serve` does; a tool that only opens the service (`export`)
    /// must not claim deliveries.
    public var webhookDeliveries = false
    /// Caches to purge after every change that moves what apps get (`--purge-url`, repeatable): each gets `PURGE`
    /// with the stale keys in `Surrogate-Key` (see ``CacheKeys``). Empty: none.
    public var purgeURLs: [String] = []
    /// How purges are sent (nil: libcurl); a test's recorder.
    var purgeSender: CachePurger.Send?
    /// The service's clock (``TabService/clock``): the machine's, or a test's.
    public var clock: TimeSource = .system

    /// Where a trusted proxy names the client.
    public enum ForwardedHeader: String, Sendable, CaseIterable {
        /// `X-Forwarded-For` (nginx's `$proxy_add_x_forwarded_for`, HAProxy's `option forwardfor`).
        case xForwardedFor = "x-forwarded-for"
        /// RFC 7239's `Forwarded: for=`.
        case forwarded
    }

    public init(
        cacheControl: String = "no-cache", errorCacheControl: String = "no-store", maxWaitSeconds: Int = 300,
        adminTokens: [(name: String, token: String)] = [], variantCacheBytes: Int = 512 << 20, trustedProxies: Set<String> = [],
        authFailuresPerMinute: Int = 10
    ) {
        self.authFailuresPerMinute = authFailuresPerMinute
        self.trustedProxies = trustedProxies
        self.cacheControl = cacheControl
        self.errorCacheControl = errorCacheControl
        self.maxWaitSeconds = maxWaitSeconds
        self.adminTokens = adminTokens
        self.variantCacheBytes = variantCacheBytes
    }
}

/// The tab-layout service: the client plane served from an immutable snapshot of compiled layouts, the
/// management plane writing through the store (off libmicrohttpd's threads) and swapping in a new snapshot.
public final class TabService: HTTPHandler {
    /// What the service is made of (``ServiceParts``: its components, collections and gate, wired there alone).
    let parts: ServiceParts
    let stopping = Atomic<Bool>(false)
    /// Change requests per state, as the schedule's clock last read them.
    let changeRequestCounts = Mutex<[String: Int]>([:])
    /// The dispatcher, stored once at the end of the first phase of ``init`` (see ``router``).
    private let boundRouter = AtomicLazyReference<Router>()
    /// The write commands, stored once at the end of the first phase of ``init`` (see ``changes``).
    private let madeChanges = AtomicLazyReference<Changes>()

    /// Loads every current layout and strings table from `store` and compiles the first snapshot.
    /// - Throws: ``StoreError`` when the store cannot be read.
    public init(store: any TabStore, configuration: ServiceConfiguration, logger: Logger) async throws(StoreError) {
        parts = try await ServiceParts(store: store, configuration: configuration, logger: logger)
        _ = madeChanges.storeIfNil(parts.makeChanges(failures: storeFailures))
        _ = boundRouter.storeIfNil(bindRoutes())
        try await reloadTokens()
        try await changes.reloadBuilds()
        try await changes.loadRollouts()
        try await changes.loadRevocations()
        followStoreChanges()
        startRolloutStepper()
        audit.pruneInTheBackground(retentionDays: configuration.auditRetentionDays, maxRows: configuration.auditMaxRows)
        followBuilds()
        applyScheduledChangeRequests()
        if configuration.webhookDeliveries { webhookWorker.start() }
    }

    // The components, as ``parts`` made them.
    var store: any TabStore { parts.store }
    var configuration: ServiceConfiguration { parts.configuration }
    var clock: TimeSource { parts.clock }
    var logger: Logger { parts.logger }
    var metrics: Metrics { parts.metrics }
    var publisher: Publisher { parts.publisher }
    var budget: VariantBudget { parts.budget }
    var credentials: Credentials { parts.credentials }
    var console: ConsoleFiles { parts.console }
    var environmentList: EnvironmentList { parts.environments }
    var audit: AuditLog { parts.audit }
    var webhookWorker: WebhookWorker { parts.webhookWorker }
    var reportLedger: ReportLedger { parts.reportLedger }
    var readMemo: ReadMemo { parts.readMemo }
    var manifests: ManifestMemo { parts.manifests }
    var builds: BuildRegistry { parts.builds }

    /// The dispatcher: the route table bound to the collections' handlers (``bindRoutes()``).
    var router: Router {
        guard let router = boundRouter.load() else { preconditionFailure("the routes are bound in init, before any request") }
        return router
    }

    /// The write commands (``ServiceParts/makeChanges(failures:)``).
    var changes: Changes {
        guard let changes = madeChanges.load() else { preconditionFailure("the write commands are made in init, before any request") }
        return changes
    }

    /// The published snapshot: the served environment's, holding the others'.
    var snapshot: Snapshot { publisher.snapshot }

    // MARK: Background jobs: the service starts them, each runs on its capability's value

    /// Starts the stepper (until the service stops). While no rollout is served it sleeps until a publication (which
    /// may bring one, from this replica or another) rather than waking four times a second to find none.
    func startRolloutStepper() {
        let publications = publisher.publications
        Task.detached { [weak self] in
            var lastFlush = ContinuousClock.now
            var lastPrune = ContinuousClock.now
            var countsStored = true  // nothing served yet, nothing to store
            while true {
                let idle: Bool
                do {  // the service is held only while it works, never across the sleep
                    guard let service = self, !service.stopping.load(ordering: .relaxed) else { return }
                    idle = service.publisher.snapshot.everyRollout.isEmpty
                    // Reports of ended rollouts and of versions are pruned whether or not a rollout runs now.
                    if ContinuousClock.now - lastPrune >= .seconds(600) {
                        lastPrune = .now
                        await service.reportLedger.prune(service.changes)
                    }
                    if idle && !countsStored {  // the counts as the last rollout ended them, once
                        countsStored = true
                        await service.changes.storeServedCounts()
                    }
                }
                if idle {
                    await publications.wait(upTo: .seconds(60))
                    continue
                }
                countsStored = false
                try? await Task.sleep(for: .milliseconds(250))
                guard let service = self, !service.stopping.load(ordering: .relaxed) else { return }
                await service.changes.recordDueSteps()
                await service.reportLedger.evaluate(service.changes)
                if ContinuousClock.now - lastFlush >= .seconds(2) {
                    lastFlush = .now
                    await service.changes.storeServedCounts()
                }
            }
        }
    }

    /// Every minute: the sightings of builds and the builds other replicas declared (``Changes/exchangeSightings()``).
    func followBuilds() {
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: .seconds(60))
                guard let self, !self.stopping.load(ordering: .relaxed) else { return }
                await self.changes.exchangeSightings()
            }
        }
    }

    /// How often the schedule of change requests reads them when nothing here announced a change and no `applyAt` is
    /// nearer: what another replica created, approved or ended is counted (and due requests applied) within this.
    static let changeRequestRereadPeriod = Duration.seconds(10)

    /// The schedule of change requests: approved ones whose `applyAt` has come are applied and the requests per state
    /// counted (``Changes/applyDueChangeRequests(count:)``) at once after this replica announces a change request, at
    /// the earliest `applyAt` still ahead, and otherwise every ``changeRequestRereadPeriod``; every minute, those that
    /// ended more than `--change-request-retention` days ago are deleted, 500 at a time. In between it sleeps.
    func applyScheduledChangeRequests() {
        let retentionMillis = Int64(configuration.changeRequestRetentionDays) * 86_400_000
        let reviewed = !configuration.approvals.required.isEmpty
        let announced = publisher.changeRequests
        Task { [weak self] in
            var lastPrune = ContinuousClock.now - .seconds(60)
            while true {
                var sleep = Duration.seconds(60)
                do {  // the service is held only while it works, never across the sleep
                    guard let self, !self.stopping.load(ordering: .relaxed) else { return }
                    if reviewed {
                        let nextApplyAt = await self.changes.applyDueChangeRequests { counts in
                            self.changeRequestCounts.withLock { $0 = counts }
                        }
                        sleep = Self.changeRequestRereadPeriod
                        if let nextApplyAt { sleep = min(sleep, .milliseconds(max(1, nextApplyAt - self.clock.unixMillis))) }
                    }
                    if ContinuousClock.now - lastPrune >= .seconds(60) {
                        lastPrune = .now
                        let before = self.clock.unixMillis - retentionMillis
                        while let pruned = try? await self.store.pruneChangeRequests(finishedBefore: before, limit: 500), pruned == 500 {}
                    }
                    sleep = min(sleep, lastPrune + .seconds(60) - .now)
                }
                await announced.wait(upTo: max(sleep, .milliseconds(1)))
            }
        }
    }

    /// `tabserver_change_requests{state}`: requests per state, as the schedule last read them (``applyScheduledChangeRequests()``).
    var changeRequestGauges: String {
        let counts = changeRequestCounts.withLock { $0 }
        guard !counts.isEmpty else { return "" }
        var text = "# HELP tabserver_change_requests Change requests by state (read at each change here, and every 10 s).\n"
        text += "# TYPE tabserver_change_requests gauge\n"
        for (state, count) in counts.sorted(by: { $0.key < $1.key }) { text += "tabserver_change_requests{state=\"\(state)\"} \(count)\n" }
        return text
    }

    /// Accounts with a compiled layout of their own.
    public var layoutCount: Int { snapshot.entries.count }

    /// Counts and logs a store failure (a full disk, a store that does not answer), and after a deadline catches up
    /// later (the write may have committed); a refused precondition or a record not found is no failure. The answer is
    /// ``Problem/store(_:)``'s.
    func noteStoreFailure(_ error: StoreError) {
        switch error {
        case .diskFull, .unsupportedURL, .unavailable, .timedOut, .schemaTooNew, .targetNotEmpty, .copyMismatch:
            metrics.storeErrors.add()
            logger.error("store failure: \(error)")
            if case .timedOut = error { catchUpLater() }
        case .notFound, .preconditionRequired, .conflict, .preconditionFailed, .extended, .missingBase, .refused:
            break
        }
    }

    /// Whether ``beginStopping()`` was called.
    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// The first step of a graceful stop: `/readyz` answers 503, every held long-poll answers 304 at once, and
    /// change-feed readers get what they have. Call it before stopping the HTTP server.
    public func beginStopping() {
        stopping.store(true, ordering: .relaxed)
        publisher.waiters.stop()
        publisher.feed.stop()
        webhookWorker.cancel()
    }

    // MARK: HTTPHandler

    public func handle(_ request: borrowing HTTPRequest) -> HTTPReply { serve(request) }

    /// Decides before the body is read: unknown paths, wrong methods and missing tokens are answered at once.
    /// What it decided (route, parameters, author) is handed to ``handle(_:)`` with the body, not decided again.
    public func admit(_ request: borrowing HTTPRequest) -> Admission {
        switch router.admission(request) {
        case .success(let admitted): return .proceedNoting(admitted)
        case .failure(let refusal):
            metrics.record(slot: refusal.slot, status: refusal.response.status, nanoseconds: 0)
            return .refuse(refusal.response)
        }
    }

    /// Held long-polls answer 304 and change-feed readers get what they have, before requests in flight drain.
    public func serverWillStop() { beginStopping() }

    /// Routes `request`, counts it by route and status, and logs writes and failures with a request id.
    func serve(_ request: borrowing HTTPRequest) -> HTTPReply {
        let started = clock.nanoseconds
        if request.admission == nil,
            let remembered = readMemo.answer(request, sequence: publisher.sequence, generation: budget.generation)
        {
            // What the route and its handler answered to these very bytes at this snapshot (counted as they count it).
            remembered.representation.markUsed()
            if let declared = remembered.build {
                builds.note(declared, atMillis: clock.unixMillis, withheld: remembered.representation.withholds)
            }
            metrics.cacheHits.add(1, ordering: .relaxed)
            metrics.memoHits.add(1, ordering: .relaxed)
            metrics.record(slot: remembered.slot, status: remembered.response.status, nanoseconds: clock.nanoseconds &- started)
            return .prepared(remembered.response)
        }
        return router.serve(request, started: started)
    }

    public func reject(_ violation: RequestLimitViolation) -> HTTPResponse {
        var response: HTTPResponse
        switch violation {
        case .headerBlockTooLarge(let limit):
            metrics.record(slot: 0, status: 431, nanoseconds: 0)
            response =
                Problem(
                    .headerTooLarge, detail: "the request line and header fields exceed \(limit) bytes"
                ).response
        case .bodyTooLarge(let limit):
            metrics.record(slot: 0, status: 413, nanoseconds: 0)
            response =
                Problem(.tooLarge, detail: "the body exceeds \(limit) bytes")
                .response
        }
        response.headers.append(HTTPHeader("Cache-Control", configuration.errorCacheControl))
        return response
    }

    /// The answer to a request that will be refused whatever its body holds (unknown path, wrong method, no
    /// valid token), decided from the request line and headers alone; nil when it may go on.
    func refusalBeforeBody(_ request: borrowing HTTPRequest) -> HTTPResponse? { router.refusalBeforeBody(request) }
}

/// A JSON answer with the canonical encoding; `nullable` members (`null` when nil) follow the others, in the order
/// these answers have always had (``CanonicalJSON/encode(object:trailing:)``).
func json(_ status: Int, _ object: [String: JSONValue], nullable: [String: JSONValue?] = [:], headers: [HTTPHeader] = []) -> HTTPResponse {
    let body = CanonicalJSON.encode(object: object, trailing: nullable.mapValues { $0 ?? .null })
    return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: body)
}
