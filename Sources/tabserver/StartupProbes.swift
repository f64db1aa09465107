import Foundation
import MicroHTTPD

/// What `serve` answers while it waits for its store and builds its first snapshot: `/healthz` 200 (the process
/// is alive), `/readyz` 503 saying what it waits for, anything else 503 with `Retry-After`. A platform's probes
/// then see a live process waiting for its database, not a dead one.
final class StartupProbes: HTTPHandler, @unchecked Sendable {
    // Safety: `lock` guards `reason`.
    private let lock = NSLockLike()
    private var reason: String

    init(reason: String) { self.reason = reason }

    /// What `/readyz` says from now on.
    func waiting(for why: String) { lock.withLock { reason = why } }

    var currentReason: String { lock.withLock { reason } }

    func handle(_ request: borrowing HTTPRequest) -> HTTPReply {
        switch (request.method, request.path) {
        case (.get, "/healthz"), (.head, "/healthz"):
            return .response(Self.json(200, #"{"status":"ok"}"#))
        case (.get, "/readyz"), (.head, "/readyz"):
            return .response(Self.problem(slug: "starting", detail: "not ready: \(currentReason)"))
        default:
            return .response(Self.problem(slug: "starting", detail: "the server is starting: \(currentReason); retry later"))
        }
    }

    func reject(_ violation: RequestLimitViolation) -> HTTPResponse {
        Self.problem(slug: "starting", detail: "the server is starting: \(currentReason); retry later")
    }

    static func json(_ status: Int, _ body: String, headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: [
                HTTPHeader("Content-Type", status >= 400 ? "application/problem+json" : "application/json"),
                HTTPHeader("Cache-Control", "no-store"),
            ]
                + headers,
            body: Array(body.utf8))
    }

    /// A 503 problem (RFC 9457) with `Retry-After`.
    static func problem(slug: String, detail: String) -> HTTPResponse {
        let object: [String: Any] = [
            "type": "urn:tabserver:problem:\(slug)", "title": "Service Unavailable", "status": 503, "detail": detail,
        ]
        let body =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) }
            ?? "{}"
        return json(503, body, headers: [HTTPHeader("Retry-After", "5")])
    }
}
