import MicroHTTPD

/// What operators and platforms read: probes, metrics, this API's description and the web console.
extension TabService {
    static let operationsRoutes: [Route<TabService>] = [
        Route(.get, "/healthz", .open, label: "healthz", APIOperation("The process is alive.", responses: [(200, "{description: Alive.}")]))
        {
            _, _, _ in .response(json(200, ["status": .string("ok")]))
        },
        Route(
            .get, "/readyz", .open, label: "readyz",
            APIOperation("The store answers.", responses: [(200, "{description: Ready.}"), (503, APIOperation.problem)])
        ) { service, _, _ in service.readiness() },
        Route(
            .get, "/metrics", .open, label: "metrics",
            APIOperation(
                "Prometheus text format.",
                responses: [
                    (
                        200,
                        """
                        description: Metrics.
                        content:
                          text/plain: {schema: {type: string}}
                        """
                    )
                ])
        ) { service, _, _ in .response(service.metricsText()) },
        Route(
            .get, "/openapi.yaml", .open, label: "openapi",
            APIOperation(
                "This document.",
                responses: [
                    (
                        200,
                        """
                        description: OpenAPI 3.1.
                        content:
                          application/yaml: {schema: {type: string}}
                        """
                    )
                ])
        ) { _, _, _ in
            .response(
                HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/yaml")], body: Array(OpenAPIDocument.yaml.utf8))
            )
        },
        Route(
            .get, "/console", .open, label: "console_redirect",
            APIOperation("Redirects to /console/.", responses: [(308, "{description: To /console/.}")])
        ) { _, _, _ in .response(HTTPResponse(status: 308, headers: [HTTPHeader("Location", "/console/")])) },
        Route(
            .get, "/console/", .open, label: "console",
            APIOperation(
                "The operators' web console.",
                responses: [
                    (
                        200,
                        """
                        description: index.html
                        content:
                          text/html: {schema: {type: string}}
                        """
                    )
                ])
        ) { service, request, _ in service.console.reply(file: "index.html", ifNoneMatch: request.header("If-None-Match")) },
        Route(
            .get, "/console/{file}", .open, label: "console",
            APIOperation(
                "A file of the web console.",
                responses: [(200, "{description: The file.}"), (400, APIOperation.problem), (404, APIOperation.problem)])
        ) { service, request, match in service.console.reply(file: match["file"], ifNoneMatch: request.header("If-None-Match")) },
    ]
}
