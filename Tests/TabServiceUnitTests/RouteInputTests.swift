import Foundation
import Logging
import MicroHTTPD
import Synchronization
import TabAccess
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

/// `X-Probe`: a whole number (a bad one is a 400 of its own).
private struct ProbeNumber: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let value = Int(text) else { throw .problem(.badRequest("\(name) is a whole number, not '\(text)'")) }
        self.value = value
    }

    static var schema: APISchema { .integer() }
}

/// What the probe's handler was handed, one entry per run.
private struct Handed: Sendable {
    var id: TokenID
    var limit: Int?
    var after: AuditCursor?
    var probe: Int?
    /// Reads of what the route does not declare (by name, or by a type other than the declared one): all must be nil.
    var undeclared: [String?]
}

/// What a probe's handler was handed, run after run.
private final class HandedLog: Sendable {
    let runs = Mutex<[Handed]>([])
}

/// A collection of one route declaring one input of every location, whose handler notes what it was handed.
private struct ProbeRoutes: RouteCollection {
    let log: HandedLog

    static let routes: [Route<ProbeRoutes>] = [
        Route(
            .get, "/probe/{id}", .open, label: "probe",
            inputs: [
                .path("id", TokenID.self), .query("limit", AuditPageSize.self), .query("after", AuditCursor.self),
                .header("X-Probe", ProbeNumber.self),
            ], touchesStore: true, APIOperation("A probe.", responses: [(200, "{description: Handed.}")])
        ) { probe, _, match in
            let inputs = match.inputs
            let handed = Handed(
                id: inputs.path("id"), limit: inputs.query("limit", as: AuditPageSize.self)?.value, after: inputs.query("after"),
                probe: inputs.header("X-Probe", as: ProbeNumber.self)?.value,
                undeclared: [
                    inputs.query("actor", as: String.self), inputs.query("limit", as: String.self),
                    inputs.header("X-Other", as: String.self),
                ])
            probe.log.runs.withLock { $0.append(handed) }
            return .response(HTTPResponse(status: 200))
        }
    ]
}

/// A router over the probe collection alone, and what its handler was handed.
private final class ProbeHarness: Sendable {
    let probe = ProbeRoutes(log: HandedLog())
    let router: Router

    init() {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        router = ServiceParts.withoutLayouts(store: MemoryStore(), configuration: ServiceConfiguration(), logger: logger)
            .router(over: [probe])
    }

    var runs: [Handed] { probe.log.runs.withLock { $0 } }

    func respond(to request: TestRequest) async -> TestResponse { await router.respond(to: request) }
}

private let anID = "abcdefghijklmnop"

/// Typed route inputs: parsed by the router after the access gate and before the handler, which reads only what its
/// route declares; `openapi.yaml`'s parameters come from the same declarations.
@Suite struct RouteInputTests {
    @Test func aBadPathInputGetsItsProblemAndTheHandlerDoesNotRun() async {
        let harness = ProbeHarness()
        let answer = await harness.respond(to: TestRequest(.get, "/probe/NOT-AN-ID"))
        #expect(answer.status == 404 && answer.header("Content-Type") == "application/problem+json")
        #expect(CollectionHarness.object(answer)["detail"] as? String == "no token 'NOT-AN-ID'")
        #expect(harness.runs.isEmpty)
    }

    @Test func badQueryInputsAreOne400WithEveryPointer() async {
        let harness = ProbeHarness()
        let answer = await harness.respond(to: TestRequest(.get, "/probe/\(anID)", query: [("after", "zzz"), ("limit", "0")]))
        #expect(answer.status == 400)
        let body = CollectionHarness.object(answer)
        #expect(body["detail"] as? String == "the probe query has 2 problems (see errors)")
        #expect((body["errors"] as? [[String: Any]])?.compactMap { $0["pointer"] as? String } == ["/limit", "/after"], "declaration order")
        #expect(harness.runs.isEmpty)
    }

    @Test func aBadHeaderInputGetsItsProblem() async {
        let harness = ProbeHarness()
        let answer = await harness.respond(to: TestRequest(.get, "/probe/\(anID)", headers: [("X-Probe", "seven")]))
        #expect(answer.status == 400 && CollectionHarness.object(answer)["detail"] as? String == "X-Probe is a whole number, not 'seven'")
        #expect(harness.runs.isEmpty)
    }

    @Test func goodInputsReachTheHandlerTypedAndUndeclaredOnesDoNot() async throws {
        let harness = ProbeHarness()
        let cursor = AuditCursor(after: 41)
        let answer = await harness.respond(
            to: TestRequest(
                .get, "/probe/\(anID)", query: [("limit", "5"), ("after", cursor.description), ("actor", "ci")],
                headers: [("X-Probe", "7"), ("X-Other", "x")]))
        #expect(answer.status == 200)
        let handed = try #require(harness.runs.first)
        #expect(handed.id == TokenID(anID) && handed.limit == 5 && handed.after == cursor && handed.probe == 7)
        #expect(handed.undeclared == [nil, nil, nil], "an undeclared name, or a declared one read as another type, reads as nothing")
        _ = await harness.respond(to: TestRequest(.get, "/probe/\(anID)"))
        #expect(harness.runs.count == 2 && harness.runs[1].limit == nil && harness.runs[1].after == nil, "absent optional inputs")
    }

    @Test func theOpenAPIParametersAreGeneratedFromTheDeclarations() {
        let paths = OpenAPIDocument.paths(RouteTable(ProbeRoutes.endpoints))
        #expect(
            paths.contains(
                "    parameters:\n      - {name: id, in: path, required: true, schema: {type: string, pattern: '^[a-z2-7]{16}$'}}\n"))
        let declared = """
                  parameters:
                    - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}
                    - {name: after, in: query, schema: {type: string}}
                    - {name: X-Probe, in: header, schema: {type: integer}}

            """
        #expect(paths.components(separatedBy: declared).count == 3, "GET and HEAD: \(paths)")
        // It touches the store: 503 and 507, on GET as problems and on HEAD as descriptions.
        #expect(
            paths.contains(
                "        '503': {$ref: '#/components/responses/Problem'}\n        '507': {$ref: '#/components/responses/Problem'}\n"))
        #expect(
            paths.contains(
                "        '503': {description: 'Busy; see Retry-After.'}\n        '507': {description: 'Status 507, without a body.'}\n"))
    }

    @Test func everyServedRouteListsItsDeclaredInputsAndStoreAnswers() {
        for template in TabService.routeTable.templates {
            let start = OpenAPIDocument.yaml.range(of: "\n  \(template.template):\n")
            #expect(start != nil, "\(template.template)")
            guard let start else { continue }
            let rest = OpenAPIDocument.yaml[start.upperBound...]
            let item = rest.range(of: "\n  /").map { rest[..<$0.lowerBound] } ?? rest
            for (_, index) in template.routes {
                let route = TabService.routeTable.routes[index]
                for input in route.inputs { #expect(item.contains("- \(input.parameterYAML)\n"), "\(template.template) \(input.name)") }
                if route.touchesStore { #expect(item.contains("'503'") && item.contains("'507'"), "\(template.template)") }
            }
        }
    }

    @Test func theAuditQuerysWrongFieldsAreAnsweredTogether() async {
        let harness = CollectionHarness()
        let answer = await harness.respond(
            to: TestRequest(
                .get, "/v1/audit", query: [("after", "zzz"), ("limit", "1001"), ("account", "")], headers: CollectionHarness.admin))
        #expect(answer.status == 400)
        let body = CollectionHarness.object(answer)
        #expect(body["detail"] as? String == "the audit query has 3 problems (see errors)")
        #expect(
            (body["errors"] as? [[String: Any]])?.compactMap { $0["message"] as? String } == [
                "not a cursor from this log", "limit must be an integer from 1 to 1000", "account must not be empty",
            ])
        for limit in ["ten", "0"] {
            let wrong = await harness.respond(
                to: TestRequest(.get, "/v1/audit", query: [("limit", limit)], headers: CollectionHarness.admin))
            #expect(wrong.status == 400, "\(limit)")
        }
        let good = await harness.respond(
            to: TestRequest(.get, "/v1/audit", query: [("limit", "1000"), ("x", "y")], headers: CollectionHarness.admin))
        #expect(good.status == 200)
    }

    @Test func aDeliveryPagesBadQueryIsAnsweredBeforeTheWebhookIsLookedFor() async {
        let harness = CollectionHarness()
        let answer = await harness.respond(
            to: TestRequest(.get, "/v1/webhooks/none/deliveries", query: [("after", "-1")], headers: CollectionHarness.admin))
        #expect(
            answer.status == 400
                && CollectionHarness.object(answer)["detail"] as? String == "after is the next value of a previous page, not '-1'")
        let limit = await harness.respond(
            to: TestRequest(.get, "/v1/webhooks/none/deliveries", query: [("limit", "+5")], headers: CollectionHarness.admin))
        #expect(
            limit.status == 400
                && CollectionHarness.object(limit)["detail"] as? String == "limit is a whole number from 1 to 1000, not '+5'")
        let good = await harness.respond(
            to: TestRequest(.get, "/v1/webhooks/none/deliveries", query: [("limit", "5")], headers: CollectionHarness.admin))
        #expect(good.status == 404 && CollectionHarness.object(good)["detail"] as? String == "no webhook none")
    }
}
