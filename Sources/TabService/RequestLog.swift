import MicroHTTPD
import Synchronization

/// Request ids: the client's own `Request-Id` or `X-Request-Id` when it is a plain token, else one made
/// here (a random per-process prefix and a counter: unique, cheap, and never derived from the request).
final class RequestIDs: Sendable {
    private let prefix: String
    private let counter = Atomic<UInt64>(0)

    init() {
        var random = SystemRandomNumberGenerator()
        prefix = String(random.next() & 0xFFFF_FFFF, radix: 16)
    }

    func next() -> String { prefix + "-" + String(counter.add(1, ordering: .relaxed).newValue, radix: 16) }

    /// A client-supplied id is echoed only when it is 1–64 characters of `[A-Za-z0-9._-]`.
    static func acceptable(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2E || $0 == 0x5F
                    || $0 == 0x2D
            }
    }
}

/// What a log line needs to know about a request, copied while the request is valid.
struct LogContext: Sendable {
    let id: String
    let method: String
    let path: String
    let isWrite: Bool

    init(_ request: borrowing HTTPRequest, route: Endpoint?, requestIDs: RequestIDs) {
        let given = request.header("Request-Id") ?? request.header("X-Request-Id")
        id = given.flatMap { RequestIDs.acceptable($0) ? $0 : nil } ?? requestIDs.next()
        method = request.method.token
        path = request.path
        isWrite = route?.changesState ?? false
    }
}
