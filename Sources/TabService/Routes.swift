import Foundation

/// Every route the service answers: each part of the service contributes its list, and this is the only place they
/// meet, in the order their templates are tried. Dispatch, 404/405, HEAD, metrics labels, the scope table and
/// `openapi.yaml` are read off the table; the handlers are bound to the collections when the service is made.
extension TabService {
    static let routeSections: [RouteSection] = [
        .collection(\.clientPlane), .service(managementRoutes), .service(rolloutRoutes), .collection(\.access),
        .collection(\.operations), .collection(\.webhooks), .service(buildRoutes), .service(changeRequestRoutes),
    ]

    static let routeTable = RouteTable(routeSections.flatMap(\.endpoints))

    /// The dispatcher over every route, each handler bound to its collection (made here, of what each needs).
    func bindRoutes() -> Router {
        let failures = StoreFailures { [weak self] error in self?.noteStoreFailure(error) }
        let now: @Sendable () -> Date = { Date() }
        let collections = ServiceCollections(
            clientPlane: ClientPlaneRoutes(
                publisher: publisher, store: store, environments: environmentList, budget: budget, metrics: metrics, builds: builds,
                builder: builder, readMemo: readMemo, manifests: manifests, servedHistory: servedHistory, heldBudget: heldBudget,
                longPolls: longPolls, addresses: audit.addresses, cacheControl: configuration.cacheControl,
                maxWaitSeconds: configuration.maxWaitSeconds, manifestMaxAgeSeconds: configuration.manifestMaxAgeSeconds,
                signer: configuration.signer, failures: failures, logger: logger, clock: .system),
            access: AccessRoutes(
                store: store, directory: credentials.directory, bootstrap: credentials.bootstrapTokens, audit: audit,
                environments: configuration.environments, failures: failures, logger: logger, now: now),
            webhooks: WebhookRoutes(
                store: store, policy: configuration.webhookPolicy, resolver: configuration.webhookResolver, outbox: webhookWorker,
                audit: audit, failures: failures, now: now),
            operations: OperationsRoutes(
                store: store, publisher: publisher, metrics: metrics, budget: budget, console: console,
                isStopping: { [weak self] in self?.isStopping ?? true },
                capabilityMetrics: { [weak self] in self?.capabilityMetrics() ?? "" }))
        let gate = AccessGate(
            credentials: credentials, audit: audit, store: store, entryEnvironment: environmentList.entry.text, logger: logger)
        return Router(
            table: Self.routeTable, handlers: Self.routeSections.flatMap { $0.bind(self, collections) }, gate: gate, metrics: metrics,
            logger: logger, requestIDs: requestIDs, errorCacheControl: configuration.errorCacheControl)
    }

    /// The client plane's `environment` query parameter, for the routes still on the service that take it (rollouts).
    static var environmentParameter: String { ClientPlaneRoutes.environmentParameter }

    /// What the capabilities not in a collection yet add to `/metrics` (``OperationsRoutes/capabilityMetrics``).
    private func capabilityMetrics() -> String {
        var text = webhookWorker.counters.text
        text += rolloutGauges()
        text += "# HELP tabserver_tabs_withheld_total Answers to a declared build that held back tabs it cannot open.\n"
        text += "# TYPE tabserver_tabs_withheld_total counter\n"
        text += builds.withheldLines.map { $0 + "\n" }.joined()
        return text + changeRequestGauges
    }

    /// The scope × route table of docs/security.md, read off the route table (a test checks the document holds
    /// every row): `| METHOD template | scope | what the token's accounts must cover |`, HEAD with GET.
    static func scopeTable() -> [String] {
        routeTable.routes.compactMap { route in
            guard case .scoped(let scope, let target) = route.access else { return nil }
            let method = route.method == .get ? "GET, HEAD" : route.method.token
            let reach =
                switch target {
                case .service: "—"
                case .account: "`{account}`"
                case .allAccounts: "`*`"
                }
            return "| `\(method) \(route.template)` | `\(scope.rawValue)` | \(reach) |"
        }
    }
}

/// The route collections of a service.
struct ServiceCollections: Sendable {
    let clientPlane: ClientPlaneRoutes
    let access: AccessRoutes
    let webhooks: WebhookRoutes
    let operations: OperationsRoutes
}

/// A run of the route table: routes of one collection, or routes that still take the whole service.
struct RouteSection: Sendable {
    let endpoints: [Endpoint]
    /// The handlers, bound to the service's collections.
    let bind: @Sendable (TabService, ServiceCollections) -> [RouteHandler]

    /// The routes of one of the service's collections: each handler captures that collection's value.
    static func collection<C: RouteCollection>(_ collection: KeyPath<ServiceCollections, C> & Sendable) -> RouteSection {
        RouteSection(endpoints: C.endpoints) { _, collections in collections[keyPath: collection].handlers }
    }

    /// Routes not yet in a collection of their own (issue 36): their handlers take the whole service, bound here without
    /// keeping it alive (the service holds them). Temporary: each capability that moves to a collection leaves this.
    static func service(_ routes: [Route<TabService>]) -> RouteSection {
        RouteSection(endpoints: routes.map(\.endpoint)) { service, _ in routes.map { $0.bound(unowned: service) } }
    }
}

extension Route where Owner == TabService {
    /// The handler with `service` captured without keeping it alive (the service holds its handlers).
    func bound(unowned service: TabService) -> RouteHandler {
        let reference = UnownedService(service: service)
        let handler = self.handler
        return { request, match throws(Problem) in try handler(reference.service, request, match) }
    }
}

/// A service that a handler reaches without keeping it alive.
private struct UnownedService: Sendable {
    unowned let service: TabService
}
