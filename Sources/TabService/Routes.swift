/// Every route the service answers: each part of the service contributes its list, and this is the only place they
/// meet. Dispatch, 404/405, HEAD, metrics labels and `openapi.yaml` are read off the table.
extension TabService {
    static let routeTable = RouteTable(
        clientPlaneRoutes + managementRoutes + rolloutRoutes + tokenRoutes + auditRoutes + operationsRoutes + webhookRoutes
            + buildRoutes + changeRequestRoutes)
}

extension TabService {
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
