/// Every route the service answers: each part of the service contributes its list, and this is the only place they
/// meet. Dispatch, 404/405, HEAD, metrics labels and `openapi.yaml` are read off the table.
extension TabService {
    static let routeTable = RouteTable(clientPlaneRoutes + managementRoutes + operationsRoutes + webhookRoutes)
}
