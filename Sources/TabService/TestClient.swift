import MicroHTTPD

/// A request as plain values, for running the service or a router in process (``TabService/respond(to:)``,
/// ``Router/respond(to:)``).
public struct TestRequest: Sendable {
    public var method: HTTPMethod
    public var path: String
    public var query: [(String, String)]
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var clientAddress: String

    public init(
        _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], headers: [(String, String)] = [], body: [UInt8] = [],
        clientAddress: String = "127.0.0.1"
    ) {
        self.clientAddress = clientAddress
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }
}

extension TestRequest {
    /// The request as handlers see it.
    var request: HTTPRequest { request(admission: nil) }

    func request(admission: (any Sendable)?) -> HTTPRequest {
        HTTPRequest(
            method: method, path: path, query: query, headers: headers, body: body, clientAddress: clientAddress, admission: admission)
    }
}

/// A response as plain values (what ``TabService/respond(to:)`` gives).
public struct TestResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPHeader], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A header's value (names compare case-insensitively).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

extension Router {
    /// Runs `request` through this router alone, exactly as a request from the socket is run, without one (Hummingbird's
    /// `RouterTestFramework` idea): a collection's routes in process, without a service.
    func respond(to values: TestRequest) async -> TestResponse {
        await respond(to: values) { request in serve(request, started: clock.nanoseconds) }
    }

    /// Runs `request` as the server does: admission first (its refusal, or what it decided, handed to `serve` with the
    /// body). Bodies of shared responses are copied out.
    func respond(to values: TestRequest, serve: (borrowing HTTPRequest) -> HTTPReply) async -> TestResponse {
        let reply: HTTPReply
        switch admission(values.request) {
        case .failure(let refusal): reply = .response(refusal.response)
        case .success(let admitted): reply = serve(values.request(admission: admitted))
        }
        switch reply {
        case .prepared(let prepared):
            return TestResponse(status: prepared.status, headers: prepared.headers, body: values.method == .head ? [] : prepared.body)
        case .response(let response):
            return TestResponse(status: response.status, headers: response.headers, body: values.method == .head ? [] : response.body)
        case .deferred(let work):
            let response = await work()
            return TestResponse(status: response.status, headers: response.headers, body: values.method == .head ? [] : response.body)
        }
    }
}

extension TabService {
    /// Runs `request` through the service (its read memo, then the router) exactly as a request from the socket is
    /// run, without one.
    public func respond(to values: TestRequest) async -> TestResponse {
        await router.respond(to: values) { request in serve(request) }
    }
}
