import Foundation

/// Every route the service answers: each part of the service contributes its list, and this is the only place they
/// meet, in the order their templates are tried. Dispatch, 404/405, HEAD, metrics labels, the scope table and
/// `openapi.yaml` are read off the table; the handlers are bound to the collections when the service is made.
extension TabService {
    static let routeSections: [RouteSection] = [
        .collection(\.clientPlane), .collection(\.reports), .collection(\.management), .collection(\.rollouts), .collection(\.access),
        .collection(\.operations), .collection(\.webhooks), .collection(\.builds), .collection(\.changeRequests),
    ]

    static let routeTable = RouteTable(routeSections.flatMap(\.endpoints))

    /// The dispatcher over every route, each handler bound to its collection (``ServiceParts`` makes them).
    func bindRoutes() -> Router {
        parts.router(
            parts.collections(
                changes: changes, failures: storeFailures, isStopping: { [weak self] in self?.isStopping ?? true },
                capabilityMetrics: { [weak self] in self?.capabilityMetrics() ?? "" }))
    }

    /// Hears of the store's failures for the write commands and the collections (``noteStoreFailure(_:)``).
    var storeFailures: StoreFailures { StoreFailures { [weak self] error in self?.noteStoreFailure(error) } }

    /// What the capabilities not in a collection yet add to `/metrics` (``OperationsRoutes/capabilityMetrics``).
    private func capabilityMetrics() -> String {
        var text = webhookWorker.counters.text
        text += changes.rolloutGauges()
        text += reportLedger.metricsText()
        text += "# HELP tabserver_tabs_withheld_total Answers to a declared build that held back tabs it cannot open.\n"
        text += "# TYPE tabserver_tabs_withheld_total counter\n"
        text += builds.withheldLines.map { $0 + "\n" }.joined()
        let manifestsKept = manifests.count
        text += "# HELP tabserver_manifests_kept Manifests kept for accounts with a layout of their own and for those served default's.\n"
        text += "# TYPE tabserver_manifests_kept gauge\n"
        text += "tabserver_manifests_kept{layout=\"own\"} \(manifestsKept.own)\n"
        text += "tabserver_manifests_kept{layout=\"fallback\"} \(manifestsKept.fallback)\n"
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
                case .everything: "`*`, and every environment"
                }
            return "| `\(method) \(route.template)` | `\(scope.rawValue)` | \(reach) |"
        }
    }
}

/// The route collections of a service.
struct ServiceCollections: Sendable {
    let management: ManagementRoutes
    let rollouts: RolloutRoutes
    let reports: ReportRoutes
    let builds: BuildRoutes
    let changeRequests: ChangeRequestRoutes
    let clientPlane: ClientPlaneRoutes
    let access: AccessRoutes
    let webhooks: WebhookRoutes
    let operations: OperationsRoutes
}

/// A run of the route table: the routes of one of the service's collections.
struct RouteSection: Sendable {
    let endpoints: [Endpoint]
    /// The handlers, bound to the service's collections.
    let bind: @Sendable (ServiceCollections) -> [RouteHandler]

    /// The routes of one of the service's collections: each handler captures that collection's value.
    static func collection<C: RouteCollection>(_ collection: KeyPath<ServiceCollections, C> & Sendable) -> RouteSection {
        RouteSection(endpoints: C.endpoints) { collections in collections[keyPath: collection].handlers }
    }
}
