import Logging
import MicroHTTPD
import TabAccess
import TabTime

/// The dispatcher: the route table bound to its handlers, and what every request passes before and after one runs —
/// the table's match, the access gate (token, method, scope), the handler (the problem it throws written once), the
/// request id and error headers, metrics and the log line. ``TabService`` serves through one bound to every
/// collection; a collection's tests run one over that collection alone (``respond(to:)``), without a service.
final class Router: Sendable {
    let table: RouteTable
    /// The handlers, by index in ``RouteTable/routes``.
    private let handlers: [RouteHandler]
    let gate: AccessGate
    let metrics: Metrics
    let logger: Logger
    let requestIDs: RequestIDs
    /// `Cache-Control` of errors on open routes (``ServiceConfiguration/errorCacheControl``).
    let errorCacheControl: String
    /// What a request's time in metrics is measured with.
    let clock: TimeSource

    init(
        table: RouteTable, handlers: [RouteHandler], gate: AccessGate, metrics: Metrics, logger: Logger, requestIDs: RequestIDs,
        errorCacheControl: String, clock: TimeSource
    ) {
        precondition(handlers.count == table.routes.count, "a handler per route")
        self.table = table
        self.handlers = handlers
        self.gate = gate
        self.metrics = metrics
        self.logger = logger
        self.requestIDs = requestIDs
        self.errorCacheControl = errorCacheControl
        self.clock = clock
    }

    /// A router over `collections` alone, with a table of their routes (a collection run in process on its own).
    convenience init(
        _ collections: [any RouteCollection], gate: AccessGate, logger: Logger, errorCacheControl: String = "no-store",
        clock: TimeSource = .system
    ) {
        func endpoints(_ collection: some RouteCollection) -> [Endpoint] { type(of: collection).endpoints }
        let table = RouteTable(collections.flatMap { endpoints($0) })
        self.init(
            table: table, handlers: collections.flatMap(\.handlers), gate: gate, metrics: Metrics(labels: table.labels), logger: logger,
            requestIDs: RequestIDs(), errorCacheControl: errorCacheControl, clock: clock)
    }

    /// Runs `request` through the table, the gate and its handler, counts it by route and status (its time from
    /// `started`), and logs writes and failures with a request id.
    func serve(_ request: borrowing HTTPRequest, started: UInt64) -> HTTPReply {
        let (slot, endpoint, reply, grant) = dispatch(request)
        switch reply {
        case .prepared(let prepared):
            // The hot path: a shared response, so no per-request header or log line (metrics count it).
            metrics.record(slot: slot, status: prepared.status, nanoseconds: clock.nanoseconds &- started)
            return reply
        case .response(var response):
            let context = LogContext(request, route: endpoint, requestIDs: requestIDs)
            finish(&response, route: endpoint, id: context.id)
            metrics.record(slot: slot, status: response.status, nanoseconds: clock.nanoseconds &- started)
            log(context, response)
            return .response(response)
        case .deferred(let work):
            let context = LogContext(request, route: endpoint, requestIDs: requestIDs)
            let metrics = self.metrics
            // A change carries who made it into its transaction's audit entry.
            let audit = context.isWrite ? grant.map { gate.audit.context(request, grant: $0, requestID: context.id) } : nil
            return .deferred {
                var response = await AuditContext.$current.withValue(audit) { await work() }
                if audit != nil, response.status < 400 { metrics.auditChangeWrites.add() }
                self.finish(&response, route: endpoint, id: context.id)
                metrics.record(slot: slot, status: response.status, nanoseconds: self.clock.nanoseconds &- started)
                self.log(context, response)
                return response
            }
        }
    }

    /// Adds the request id, and to client-plane errors the `Cache-Control` that keeps shared caches from
    /// holding them (a 404 cached after the account gets a layout would hide it).
    private func finish(_ response: inout HTTPResponse, route: Endpoint?, id: String) {
        // A representation is the same bytes however it was reached (cached, built for this request, or after a
        // long-poll): no per-request header on the client plane's 2xx and 304.
        let representation = (route?.isRepresentation ?? false) && response.status < 400
        if !representation { response.headers.append(HTTPHeader("Request-Id", id)) }
        ContentPolicy.apply(to: &response)
        if response.status >= 400, route?.access.isOpen ?? true, !response.headers.contains(where: { $0.name == "Cache-Control" }) {
            response.headers.append(HTTPHeader("Cache-Control", errorCacheControl))
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

    /// What admission decided about a request: its route, its parameters and who called; handed to ``serve(_:started:)``
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
            guard matched.endpoint.takesBody || (request.header("Content-Length").map { $0 == "0" } ?? true) else {
                var response = Problem(.tooLarge, detail: "\(request.path) takes no body").response
                finish(&response, route: matched.endpoint, id: requestIDs.next())
                return .failure(Refusal(slot: slot, response: response))
            }
            return .success(Admitted(slot: slot, matched: matched))
        }
    }

    /// A matched route (its index in the table) and its parameters.
    struct Matched: Sendable {
        let index: Int
        let endpoint: Endpoint
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
        guard let (index, first, second) = table.match(request.pathBytes) else {
            return .refuse(slot: 0, Problem.notFound("no resource at \(request.path)").response)
        }
        let template = table.templates[index]
        var grant: Grant?
        if !template.isOpen {
            switch gate.authenticate(request, label: template.label) {
            case .success(let authenticated): grant = authenticated
            case .failure(let refusal):
                if let reason = refusal.refusal { gate.audit.refuse(reason, grant: nil, request, account: nil) }
                return .refuse(slot: template.slot, refusal.response)
            }
        }
        guard let route = table.route(request.method, onTemplate: index) else {
            return .refuse(slot: template.slot, Problem.methodNotAllowed(template.allow).response)
        }
        let endpoint = table.routes[route]
        let match = RouteMatch(names: template.parameterNames, first: first, second: second, grant: grant, slot: template.slot)
        if case .scoped(let scope, let target) = endpoint.access, let grant,
            let refusal = gate.refusal(
                scope, on: target, match, grant: grant, request, label: template.label, environmentsInBody: endpoint.environmentsInBody)
        {
            return .refuse(slot: template.slot, Problem.refused(refusal).response)
        }
        return .proceed(slot: template.slot, Matched(index: route, endpoint: endpoint, match: match), template: index)
    }

    /// Dispatch: the route table's match, its checks, the route's declared inputs parsed, then the route's handler; a
    /// problem either throws is the answer.
    private func dispatch(_ request: borrowing HTTPRequest) -> (slot: Int, route: Endpoint?, reply: HTTPReply, grant: Grant?) {
        let slot: Int
        let matched: Matched
        if let admitted = request.admission as? Admitted {
            (slot, matched) = (admitted.slot, admitted.matched)
        } else {
            switch check(request) {
            case .refuse(let slot, let response): return (slot, nil, .response(response), nil)
            case .proceed(let proceeding, let checked, _): (slot, matched) = (proceeding, checked)
            }
        }
        let reply: HTTPReply
        do throws(Problem) {
            // A route that declares no inputs, or reads them itself, gets its match as it is: nothing to parse or copy.
            let declared = matched.endpoint.inputs
            let match =
                declared.isEmpty || matched.endpoint.readsItsInputs
                ? matched.match
                : matched.match.with(try RouteInputs.parse(declared, request: request, match: matched.match, label: matched.endpoint.label))
            reply = try handlers[matched.index](request, match)
        } catch {
            reply = .response(error.response)
        }
        return (slot, matched.endpoint, reply, matched.match.grant)
    }
}
