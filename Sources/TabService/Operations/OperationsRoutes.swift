import MicroHTTPD
import TabStore

/// What operators and platforms read: probes, metrics, this API's description and the web console (docs/operations.md).
/// Every answer is read off what the collection holds: the store only for `/readyz`'s ping.
struct OperationsRoutes: RouteCollection {
    /// Asked by `/readyz` whether it answers.
    let store: any TabStore
    let publisher: Publisher
    let metrics: Metrics
    let budget: VariantBudget
    let console: ConsoleFiles
    /// Whether the service is stopping (`/readyz` answers 503 then).
    let isStopping: @Sendable () -> Bool
    /// What the other capabilities add to `/metrics` after the service's own lines (webhooks, rollouts, builds, change
    /// requests), in that order.
    let capabilityMetrics: @Sendable () -> String

    static let routes: [Route<OperationsRoutes>] = [
        Route(
            .get, "/healthz", .open, label: "healthz",
            APIOperation("The process is alive.", responses: [(200, APIOperation.answer("Alive."))])
        ) {
            _, _, _ in .response(json(200, ["status": .string("ok")]))
        },
        Route(
            .get, "/readyz", .open, label: "readyz",
            APIOperation("The store answers.", responses: [(200, APIOperation.answer("Ready."))], problems: [503])
        ) { routes, _, _ in routes.readiness() },
        Route(
            .get, "/metrics", .open, label: "metrics",
            APIOperation(
                "Prometheus text format.",
                responses: [(200, APIOperation.answer("Metrics.", ["text/plain": .string()]))])
        ) { routes, _, _ in .response(routes.metricsText()) },
        Route(
            .get, "/openapi.yaml", .open, label: "openapi",
            APIOperation(
                "This document.",
                responses: [(200, APIOperation.answer("OpenAPI 3.1.", ["application/yaml": .string()]))])
        ) { _, _, _ in
            .response(
                HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/yaml")], body: Array(OpenAPIDocument.yaml.utf8))
            )
        },
        Route(
            .get, "/console", .open, label: "console_redirect",
            APIOperation("Redirects to /console/.", responses: [(308, APIOperation.answer("To /console/."))])
        ) { _, _, _ in .response(HTTPResponse(status: 308, headers: [HTTPHeader("Location", "/console/")])) },
        Route(
            .get, "/console/", .open, label: "console",
            APIOperation(
                "The operators' web console.",
                responses: [(200, APIOperation.answer("index.html", ["text/html": .string()]))])
        ) { routes, request, _ in routes.console.reply(file: "index.html", ifNoneMatch: request.header("If-None-Match")) },
        Route(
            .get, "/console/{file}", .open, label: "console",
            APIOperation(
                "A file of the web console.",
                responses: [(200, APIOperation.answer("The file."))], problems: [400, 404])
        ) { routes, request, match in routes.console.reply(file: match["file"], ifNoneMatch: request.header("If-None-Match")) },
    ]
}
