import Logging
import MicroHTTPD
import Synchronization
import TabAccess
import TabDelivery
import TabLayout
import TabReview
import TabSigning
import TabStore
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
    /// Long-polls one client address (the forwarded client behind `--trusted-proxy`) may hold at once.
    public var heldRequestsPerAddress: Int = 512
    /// The environments (`--environments`), where changes enter first and the one apps get last: a client may name
    /// one (`?environment=`, `Tabs-Environment`; others are 404), writes go to the first unless they name another,
    /// and a token's `environments` may name them. `production` alone by default, where every answer is what it was
    /// before environments existed.
    public var environments: [String] = ["production"]
    /// Days the audit log keeps an entry (`--audit-retention`); older ones are pruned hourly in the background.
    public var auditRetentionDays: Int = 400
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
    /// `max-age` of `…/tabs/manifest` (`--manifest-max-age`), lowered to the seconds left before a rollout's next step.
    public var manifestMaxAgeSeconds = 30
    /// Signs every 200 of `…/tabs`, `…/tabs/manifest` and every bundle entry (`--signing-key`); nil signs nothing.
    public var signer: Signer?
    /// Whether this process sends the webhook outbox: `serve` does; a tool that only opens the service (`export`)
    /// must not claim deliveries.
    public var webhookDeliveries = false

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
    let store: any TabStore
    let configuration: ServiceConfiguration
    let logger: Logger
    let metrics = Metrics()
    let publisher: Publisher
    let budget: VariantBudget
    let credentials: Credentials
    let console = ConsoleFiles.load()
    let requestIDs = RequestIDs()
    let stopping = Atomic<Bool>(false)
    let heldBudget: HeldRequestBudget
    let builder = VariantBuilder()
    /// ``ServiceConfiguration/environments`` checked.
    let environmentList: EnvironmentList
    let refusals = RefusalBuffer()
    let webhookWorker: WebhookWorker
    /// This replica's answers per rollout arm.
    let armCounts = ArmCountsRegistry()
    /// Names this replica's rows of answer counts in a shared store.
    let replicaID = StoredWebhook.newID()
    /// Answers to repeated reads (see ``ReadMemo``).
    let readMemo = ReadMemo()
    /// Manifests made for the current snapshot (see ``ManifestMemo``).
    let manifests = ManifestMemo()
    /// The declared app builds (see ``BuildRegistry``).
    let builds = BuildRegistry()
    /// The versions environments served before, for `?version=N` and a build's earlier version.
    let servedHistory = ServedHistory()
    /// Change requests per state, as the schedule's clock last read them.
    let changeRequestCounts = Mutex<[String: Int]>([:])
    /// The answers of held long-polls, shared by the polls one change wakes (see ``LongPollResponses``).
    let longPolls = LongPollResponses()

    /// Loads every current layout and strings table from `store` and compiles the first snapshot.
    /// - Throws: ``StoreError`` when the store cannot be read.
    public init(store: any TabStore, configuration: ServiceConfiguration, logger: Logger) async throws(StoreError) {
        self.store = store
        self.configuration = configuration
        let environments = (try? EnvironmentList(parsing: configuration.environments.joined(separator: ","))) ?? .default
        environmentList = environments
        self.logger = logger
        self.credentials = Credentials(
            tokens: configuration.adminTokens, failureLimit: configuration.authFailuresPerMinute, logger: logger)
        let budget = VariantBudget(limit: configuration.variantCacheBytes)
        self.budget = budget
        heldBudget = HeldRequestBudget(total: configuration.heldRequestLimit, perAddress: configuration.heldRequestsPerAddress)
        // One snapshot per environment, published as one (the served environment's holds the others): a change in
        // any environment is one publication, with one sequence number for long-polls and the change feed.
        let vary = environments.isDefault ? nil : "Tabs-Environment"
        var served = Snapshot.build(
            layouts: try await store.currentLayouts(environment: environments.served.text),
            strings: try await store.currentStrings(environment: environments.served.text), budget: budget, logger: logger, vary: vary)
        for name in environments.names where name != environments.served {
            let layouts = try await store.currentLayouts(environment: name.text)
            let strings = try await store.currentStrings(environment: name.text)
            served = served.replacing(
                environment: name.text, with: Snapshot.build(layouts: layouts, strings: strings, budget: budget, logger: logger, vary: vary)
            )
        }
        publisher = Publisher(served)
        webhookWorker = WebhookWorker(
            store: store, policy: configuration.webhookPolicy, resolver: configuration.webhookResolver, logger: logger,
            retention: .seconds(configuration.webhookRetentionDays * 86_400))
        try await reloadTokens()
        try await reloadBuilds()
        try await loadRollouts()
        followStoreChanges()
        startRolloutStepper()
        pruneAuditInTheBackground()
        followBuilds()
        applyScheduledChangeRequests()
        if configuration.webhookDeliveries { webhookWorker.start() }
    }

    /// The published snapshot: the served environment's, holding the others'.
    var snapshot: Snapshot { publisher.snapshot }

    /// The snapshot of one environment.
    func snapshot(for environment: EnvironmentName) -> Snapshot {
        let top = snapshot
        return environment == environmentList.served ? top : top.environment(environment.text)
    }

    /// Publishes a change to one environment's snapshot (see ``Publisher/publish(_:)``).
    @discardableResult
    func publish(in environment: EnvironmentName, _ change: @escaping @Sendable (Snapshot) -> (Snapshot, [ChangeEvent])?) async -> Snapshot
    {
        let served = environmentList.served
        @Sendable func named(_ events: [ChangeEvent]) -> [ChangeEvent] {
            events.map { event in
                var event = event
                event.environment = environment.text
                return event
            }
        }
        return await publisher.publish { top in
            if environment == served { return change(top).map { ($0.0, named($0.1)) } }
            guard let inner = top.contents.environments[environment.text], let (next, events) = change(inner) else { return nil }
            return (top.replacing(environment: environment.text, with: next), named(events))
        }
    }

    /// Drops the cached representations that no request used since the previous sweep, across every layout
    /// (off libmicrohttpd's threads; the cache is past its bound when this runs).
    func sweepVariants() {
        var dropped = 0
        for entry in snapshot.entries.values { dropped += entry.sweep() }  // resolved entries only; never resolves
        budget.evictions.add(dropped, ordering: .relaxed)
        if dropped > 0 { budget.swept() }
        budget.sweepFinished()
        logger.debug("variant cache swept: \(dropped) dropped, \(budget.bytes) bytes held (limit \(budget.limit))")
    }

    /// Accounts with a compiled layout of their own.
    public var layoutCount: Int { snapshot.entries.count }

    // MARK: HTTPHandler

    public func handle(_ request: borrowing HTTPRequest) -> HTTPReply { serve(request) }

    /// Decides before the body is read: unknown paths, wrong methods and missing tokens are answered at once.
    /// What it decided (route, parameters, author) is handed to ``handle(_:)`` with the body, not decided again.
    public func admit(_ request: borrowing HTTPRequest) -> Admission {
        switch admission(request) {
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
        let started = nanoseconds()
        if request.admission == nil,
            let remembered = readMemo.answer(request, sequence: publisher.sequence, generation: budget.generation)
        {
            // What the route and its handler answered to these very bytes at this snapshot (counted as they count it).
            remembered.representation.markUsed()
            if let declared = remembered.build {
                builds.note(declared, atMillis: currentTimeMillis(), withheld: remembered.representation.withholds)
            }
            metrics.cacheHits.add(1, ordering: .relaxed)
            metrics.memoHits.add(1, ordering: .relaxed)
            metrics.record(slot: remembered.slot, status: remembered.response.status, nanoseconds: nanoseconds() &- started)
            return .prepared(remembered.response)
        }
        let (slot, route, reply, grant) = self.dispatch(request)
        switch reply {
        case .prepared(let prepared):
            // The hot path: a shared response, so no per-request header or log line (metrics count it).
            metrics.record(slot: slot, status: prepared.status, nanoseconds: nanoseconds() &- started)
            return reply
        case .response(var response):
            let context = LogContext(request, route: route, requestIDs: requestIDs)
            finish(&response, route: route, id: context.id)
            metrics.record(slot: slot, status: response.status, nanoseconds: nanoseconds() &- started)
            log(context, response)
            return .response(response)
        case .deferred(let work):
            let context = LogContext(request, route: route, requestIDs: requestIDs)
            let metrics = self.metrics
            // A change carries who made it into its transaction's audit entry.
            let audit = context.isWrite ? grant.map { auditContext(request, grant: $0, requestID: context.id) } : nil
            return .deferred {
                var response = await AuditContext.$current.withValue(audit) { await work() }
                if audit != nil, response.status < 400 { metrics.auditChangeWrites.add() }
                self.finish(&response, route: route, id: context.id)
                metrics.record(slot: slot, status: response.status, nanoseconds: nanoseconds() &- started)
                self.log(context, response)
                return response
            }
        }
    }

    /// Adds the request id, and to client-plane errors the `Cache-Control` that keeps shared caches from
    /// holding them (a 404 cached after the account gets a layout would hide it).
    private func finish(_ response: inout HTTPResponse, route: Route?, id: String) {
        // A representation is the same bytes however it was reached (cached, built for this request, or after a
        // long-poll): no per-request header on the client plane's 2xx and 304.
        let representation = (route?.isRepresentation ?? false) && response.status < 400
        if !representation { response.headers.append(HTTPHeader("Request-Id", id)) }
        ContentPolicy.apply(to: &response)
        if response.status >= 400, route?.access.isOpen ?? true, !response.headers.contains(where: { $0.name == "Cache-Control" }) {
            response.headers.append(HTTPHeader("Cache-Control", configuration.errorCacheControl))
        }
    }

    /// Writes and failures get a structured log line with their request id; reads are counted, not logged.
    private func log(_ context: LogContext, _ response: HTTPResponse) {
        let metadata: Logger.Metadata = [
            "request-id": "\(context.id)", "method": "\(context.method)", "path": "\(context.path)",
            "status": "\(response.status)",
        ]
        if response.status >= 500 {
            logger.error("request failed", metadata: metadata)
        } else if context.isWrite && response.status < 400 {
            var details = metadata
            if let version = response.headers.first(where: { $0.name == "Layout-Version" }) { details["version"] = "\(version.value)" }
            logger.info("change committed", metadata: details)
        } else {
            logger.debug("request answered", metadata: metadata)
        }
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
    func refusalBeforeBody(_ request: borrowing HTTPRequest) -> HTTPResponse? {
        if case .failure(let refusal) = admission(request) { return refusal.response }
        return nil
    }

    /// A request refused before its body, and the metrics slot it counts in.
    struct Refusal: Error {
        let slot: Int
        let response: HTTPResponse
    }

    /// What admission decided about a request: its route, its parameters and who called; handed to ``serve(_:)``
    /// with the body so that the route is matched and the token checked once.
    struct Admitted: Sendable {
        let slot: Int
        let matched: Matched
    }

    /// The route table's check, and 413 for a body on a route that takes none.
    func admission(_ request: borrowing HTTPRequest) -> Result<Admitted, Refusal> {
        switch check(request) {
        case .refuse(let slot, var response):
            finish(&response, route: nil, id: requestIDs.next())
            return .failure(Refusal(slot: slot, response: response))
        case .proceed(let slot, let matched, _):
            guard matched.route.takesBody || (request.header("Content-Length").map { $0 == "0" } ?? true) else {
                var response = Problem(.tooLarge, detail: "\(request.path) takes no body").response
                finish(&response, route: matched.route, id: requestIDs.next())
                return .failure(Refusal(slot: slot, response: response))
            }
            return .success(Admitted(slot: slot, matched: matched))
        }
    }

    /// A matched route and its parameters.
    struct Matched: Sendable {
        let route: Route
        let match: RouteMatch
    }

    private enum Check {
        /// Refused, counted in metrics slot `slot`.
        case refuse(slot: Int, HTTPResponse)
        case proceed(slot: Int, Matched, template: Int)
    }

    /// The route table's match, then its checks: scoped routes authenticate the token first (401: a route's methods
    /// are not disclosed without one), then the method (405), then the route's scope on its target (403).
    private func check(_ request: borrowing HTTPRequest) -> Check {
        let table = Self.routeTable
        guard let (index, first, second) = table.match(request.pathBytes) else {
            return .refuse(slot: 0, Problem.notFound("no resource at \(request.path)").response)
        }
        let template = table.templates[index]
        var grant: Grant?
        if !template.isOpen {
            switch authenticate(request, label: template.label) {
            case .success(let authenticated): grant = authenticated
            case .failure(let refusal):
                if let reason = refusal.refusal { auditRefusal(reason, grant: nil, request, account: nil) }
                return .refuse(slot: template.slot, refusal.response)
            }
        }
        guard let route = table.route(request.method, onTemplate: index) else {
            return .refuse(slot: template.slot, Problem.methodNotAllowed(template.allow).response)
        }
        let match = RouteMatch(names: template.parameterNames, first: first, second: second, grant: grant, slot: template.slot)
        if case .scoped(let scope, let target) = route.access, let grant,
            let refusal = grant.authorize(
                Self.accessRequest(scope, target, match, environment: target == .service ? nil : managedEnvironmentName(request)))
        {
            logger.warning(
                "access refused", metadata: ["token": "\(grant.name)", "route": "\(template.label)", "reason": "\(refusal.description)"])
            auditRefusal(refusal, grant: grant, request, account: match.names.contains("account") ? match["account"] : nil)
            return .refuse(slot: template.slot, Self.refusalResponse(refusal))
        }
        return .proceed(slot: template.slot, Matched(route: route, match: match), template: index)
    }

    /// The environment an account's management route touches: `?environment=`, else the first (where writes enter).
    /// A name that is no environment is the handler's 404, not a refusal here.
    private func managedEnvironmentName(_ request: borrowing HTTPRequest) -> String {
        request.query("environment") ?? environmentList.entry.text
    }

    /// What a scoped route asks of the grant: its scope on the service, the `{account}` or every account, in the
    /// `{environment}` when the template has one, else in `environment` (an account's routes: `?environment=`).
    static func accessRequest(_ scope: Scope, _ target: AccessTarget, _ match: RouteMatch, environment named: String? = nil)
        -> AccessRequest
    {
        let environment = match.names.contains("environment") ? match["environment"] : named
        switch target {
        case .service: return AccessRequest(scope: scope, target: .service, environment: environment)
        case .account: return AccessRequest(scope: scope, target: .account(match["account"]), environment: environment)
        case .allAccounts: return AccessRequest(scope: scope, target: .allAccounts, environment: environment)
        }
    }

    /// Dispatch: the route table's match, its checks, then the route's handler.
    private func dispatch(_ request: borrowing HTTPRequest) -> (slot: Int, route: Route?, reply: HTTPReply, grant: Grant?) {
        if let admitted = request.admission as? Admitted {
            return (
                admitted.slot, admitted.matched.route, admitted.matched.route.handler(self, request, admitted.matched.match),
                admitted.matched.match.grant
            )
        }
        switch check(request) {
        case .refuse(let slot, let response): return (slot, nil, .response(response), nil)
        case .proceed(let slot, let matched, _):
            return (slot, matched.route, matched.route.handler(self, request, matched.match), matched.match.grant)
        }
    }
}

/// A JSON answer with the canonical encoding; `nullable` members are written as `null` when nil (JSONValue has
/// no null), after the others.
func json(_ status: Int, _ object: [String: JSONValue], nullable: [String: JSONValue?] = [:], headers: [HTTPHeader] = []) -> HTTPResponse {
    var body = CanonicalJSON.encode(.object(object))
    for (name, value) in nullable.sorted(by: { $0.key < $1.key }) {
        body.removeLast()
        body += Array(",\"\(name)\":".utf8) + (value.map { CanonicalJSON.encode($0) } ?? Array("null".utf8)) + [UInt8(ascii: "}")]
    }
    return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: body)
}

func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

#if canImport(Glibc)
    import Glibc
#endif
