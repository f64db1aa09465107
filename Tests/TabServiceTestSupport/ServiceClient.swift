import Foundation
import MicroHTTPD
import TabService
import TabStore
import TabTestSupport

/// One way to send the service a request: in process through its dispatch (``InProcessClient``) or over a real socket
/// to a live server (``SocketClient``), the request and the answer the same values both ways. A test body written
/// against it runs both ways; where the two answer differently, the body says so by reading ``overSocket``.
package protocol ServiceClient: Sendable {
    /// Whether requests cross a socket to libmicrohttpd, which writes `Content-Length`, `Date` and `Connection` itself.
    var overSocket: Bool { get }

    /// Sends `request` and reads the whole answer (a HEAD's and a 304's without a body).
    func send(_ request: TestRequest) async throws -> TestResponse
}

extension ServiceClient {
    /// `method path` with `query`, `headers` and `body`.
    package func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> TestResponse {
        try await send(TestRequest(method, path, query: query, headers: headers, body: body))
    }
}

/// The service in process: each request runs through ``TabService/respond(to:)`` (the read memo, the router, the
/// gate, the handler) exactly as one from the socket is run, without one. No socket is opened.
package struct InProcessClient: ServiceClient {
    package let service: TabService
    package var overSocket: Bool { false }

    package init(_ service: TabService) { self.service = service }

    /// A service over `store` with the repository's `configs/` imported (``ServiceHarness/inProcess(store:importingConfigs:_:)``).
    package static func make(
        store: MemoryStore = MemoryStore(), _ configure: (inout ServiceConfiguration) -> Void = { _ in }
    ) async throws -> InProcessClient {
        InProcessClient(try await ServiceHarness.inProcess(store: store, configure))
    }

    package func send(_ request: TestRequest) async throws -> TestResponse { await service.respond(to: request) }
}

/// A live service over 127.0.0.1 (``ServiceHarness``), sent each request by ``HTTPTestClient`` on one kept-alive
/// connection: the bytes libmicrohttpd writes are the answer.
package final class SocketClient: ServiceClient {
    package let harness: ServiceHarness
    private let client: HTTPTestClient
    package var overSocket: Bool { true }

    package init(_ harness: ServiceHarness) {
        self.harness = harness
        client = harness.client()
    }

    /// A live service over `store` with the repository's `configs/` imported.
    package static func make(store: any TabStore = MemoryStore()) async throws -> SocketClient {
        SocketClient(try await ServiceHarness(store: store))
    }

    package func send(_ request: TestRequest) async throws -> TestResponse {
        let answer = try await client.send(
            request.method.token, request.path + Self.queryString(request.query), headers: request.headers, body: request.body)
        return TestResponse(status: answer.status, headers: answer.headers.map { HTTPHeader($0.name, $0.value) }, body: answer.body)
    }

    /// `?name=value&…`, each percent-encoded, or nothing for no arguments.
    static func queryString(_ query: [(String, String)]) -> String {
        let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text }
        guard !query.isEmpty else { return "" }
        return "?" + query.map { "\(encoded($0.0))=\(encoded($0.1))" }.joined(separator: "&")
    }
}
