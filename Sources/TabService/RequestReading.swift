import MicroHTTPD

/// What handlers read of a request. libmicrohttpd's ``HTTPRequest`` implements it over the daemon's memory
/// (no copies on the read path); ``TestRequest`` implements it over plain values, so that a request can be run
/// through the route table in process, without a socket.
protocol RequestReading: ~Copyable {
    var method: HTTPMethod { get }
    /// The body (empty for GET and HEAD).
    var body: [UInt8] { get }
    /// The percent-decoded path without the query.
    var path: String { get }
    /// Calls `body` with the path's bytes, valid only during the call.
    func withPath<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R
    /// A header's first value (names compare case-insensitively).
    func header(_ name: String) -> String?
    /// Calls `body` with a header's first value's bytes, or nil.
    func withHeader<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R
    /// Every value of a header, joined with ", " (RFC 9110 §5.3).
    func headerList(_ name: String) -> String?
    /// Calls `body` with a header's value combined over all its field lines (RFC 9110 §5.3), or nil when absent;
    /// with one line, libmicrohttpd's own bytes (no copy).
    func withCombinedHeader<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R
    /// A query argument's first value.
    func query(_ name: String) -> String?
    /// Every value of a repeated query argument.
    func queryValues(_ name: String) -> [String]
    /// The peer's IP address as text.
    var clientAddress: String { get }
}

extension HTTPRequest: RequestReading {
    func withPath<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R { body(pathBytes) }
}

/// A request as plain values, for running the service in process (``TabService/respond(to:)``).
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

extension TestRequest: RequestReading {
    func withPath<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        Array(path.utf8).withUnsafeBufferPointer(body)
    }

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    func withHeader<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard let value = header(name) else { return body(nil) }
        return Array(value.utf8).withUnsafeBufferPointer { body($0) }
    }

    func headerList(_ name: String) -> String? {
        let values = headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    func withCombinedHeader<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard let value = headerList(name) else { return body(nil) }
        return Array(value.utf8).withUnsafeBufferPointer { body($0) }
    }

    func query(_ name: String) -> String? { query.first { $0.0 == name }?.1 }

    func queryValues(_ name: String) -> [String] { query.filter { $0.0 == name }.map(\.1) }
}

/// A response as plain values (what ``TabService/respond(to:)`` gives).
public struct TestResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    /// A header's value (names compare case-insensitively).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

extension TabService {
    /// Runs `request` through the route table and the handlers, exactly as a request from the socket is run,
    /// without one (Hummingbird's `RouterTestFramework` idea). Bodies of shared responses are copied out.
    public func respond(to request: TestRequest) async -> TestResponse {
        let refusal = refusalBeforeBody(request)
        let reply = refusal.map { HTTPReply.response($0) } ?? serve(request)
        switch reply {
        case .prepared(let prepared):
            return TestResponse(status: prepared.status, headers: prepared.headers, body: request.method == .head ? [] : prepared.body)
        case .response(let response):
            return TestResponse(status: response.status, headers: response.headers, body: request.method == .head ? [] : response.body)
        case .deferred(let work):
            let response = await work()
            return TestResponse(status: response.status, headers: response.headers, body: request.method == .head ? [] : response.body)
        }
    }
}
