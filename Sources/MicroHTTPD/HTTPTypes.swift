/// An HTTP request method, as libmicrohttpd read it from the request line.
public enum HTTPMethod: Sendable, Equatable {
    case get, head, put, post, patch, delete, options
    /// Any other token, kept as sent.
    case other(String)

    /// The method's token as it appears on the request line.
    public var token: String {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .put: "PUT"
        case .post: "POST"
        case .patch: "PATCH"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .other(let token): token
        }
    }
}

/// One header field of a response.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A response built for one request (errors, management answers): copied into libmicrohttpd when queued.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What a handler answers: a response prepared once and shared, one built for this request, or work
/// that must wait (a store write) during which the connection is suspended.
public enum HTTPReply: Sendable {
    case prepared(PreparedResponse)
    case response(HTTPResponse)
    /// Runs off the libmicrohttpd threads; the connection is suspended until it returns.
    case deferred(@Sendable () async -> HTTPResponse)
}

/// A request limit of ``HTTPServerConfiguration`` that a client went over.
public enum RequestLimitViolation: Sendable, Equatable {
    /// The request line and header fields together exceed this many bytes.
    case headerBlockTooLarge(limit: Int)
    /// The body exceeds this many bytes.
    case bodyTooLarge(limit: Int)
}

/// Answers requests. Called on libmicrohttpd's threads: it must not block.
public protocol HTTPHandler: Sendable {
    /// The reply to a complete request (headers and body in).
    func handle(_ request: borrowing HTTPRequest) -> HTTPReply
    /// The answer to a request that broke a limit; the connection is closed after it.
    func reject(_ violation: RequestLimitViolation) -> HTTPResponse
}
