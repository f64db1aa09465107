import ProblemDocument

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

/// A response built for one request (errors, management answers): copied into libmicrohttpd when queued, unless
/// it is a prepared response handed on as is (``init(shared:)``).
public struct HTTPResponse: Sendable {
    public var status: Int { didSet { detach() } }
    public var headers: [HTTPHeader] { didSet { detach() } }
    /// The body; for a shared response (``init(shared:)``) a copy of the prepared one's, made only when read.
    public var body: [UInt8] {
        get { shared?.body ?? ownBody }
        set {
            ownBody = newValue
            shared = nil
        }
    }
    private var ownBody: [UInt8]
    /// With an empty body, the length `Content-Length` announces instead of 0 (a 304 repeating its 200's length,
    /// RFC 9110 §8.6); nil: the body's length.
    public var announcedLength: Int? { didSet { detach() } }
    /// The prepared response this one stands for (``init(shared:)``): queued itself, with no copy; dropped when any
    /// field changes (the changed copy is queued then).
    public private(set) var shared: PreparedResponse?
    /// How the connection of a deferred reply answered with this response is resumed.
    public var resumption: Resumption = .immediate

    /// How a deferred reply's connection is resumed once it has its answer.
    public enum Resumption: Sendable, Equatable {
        /// At once, from the thread that answered (a write, a probe, a single request).
        case immediate
        /// In its turn, a slice at a time, from the server's resumer thread: for answers that come by the thousand
        /// at once (the long-polls one change wakes), so that the worker threads serve other connections between
        /// slices instead of answering thousands before the next probe or write.
        case paced
    }

    /// Makes this a response of its own (its body copied from the prepared one), so that a change is sent.
    private mutating func detach() {
        guard let prepared = shared else { return }
        shared = nil
        ownBody = prepared.body
    }

    /// A prepared response as a deferred reply's answer: queued as is (libmicrohttpd reference-counts it), so that
    /// thousands of long-polls woken by one change share one response instead of building one each. Reading `body`
    /// copies the prepared body (for in-process readers); the server sends libmicrohttpd's.
    public init(shared prepared: PreparedResponse) {
        let bodiless = prepared.bodyCount != prepared.announcedLength
        self.init(status: prepared.status, headers: prepared.headers, announcedLength: bodiless ? prepared.announcedLength : nil)
        shared = prepared
    }

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], announcedLength: Int? = nil) {
        self.status = status
        self.headers = headers
        self.ownBody = body
        self.announcedLength = announcedLength
    }

    /// A per-request copy of a shared response with other headers: the same status, body and announced length.
    public init(sharing prepared: PreparedResponse, headers: [HTTPHeader]) {
        let body = prepared.body
        self.init(
            status: prepared.status, headers: headers, body: body,
            announcedLength: body.count == prepared.announcedLength ? nil : prepared.announcedLength)
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

/// A request the server refuses on its own, before the handler sees it: broken syntax or no capacity left.
/// Answered through ``HTTPHandler/refuse(_:)``; the connection is closed after the answer.
public enum RequestRefusal: Sendable, Equatable {
    /// The request breaks RFC 9112's message syntax (a request smuggling vector or a malformed field): 400.
    /// The string says what, for the `detail` of a problem document.
    case malformed(String)
    /// A transfer coding other than `chunked` (RFC 9112 §6.1): 501.
    case transferCodingNotImplemented(String)
    /// The request target (path and query) alone is longer than `limit` bytes: 414.
    case targetTooLong(limit: Int)
    /// The query has more than `limit` parameters (`&`-separated arguments): 414.
    case tooManyQueryParameters(limit: Int)
    /// Request bodies in flight on all connections would exceed the server's memory budget: 503, to be retried
    /// after `retryAfterSeconds`.
    case bodyBudgetExhausted(retryAfterSeconds: Int)
    /// The server is stopping and the grace for held (deferred) requests ran out: 503.
    case serverStopping

    /// The status code the default answer uses.
    public var status: Int {
        switch self {
        case .malformed: 400
        case .transferCodingNotImplemented: 501
        case .targetTooLong, .tooManyQueryParameters: 414
        case .bodyBudgetExhausted, .serverStopping: 503
        }
    }
}

/// What ``HTTPHandler/admit(_:)`` decides once a request's headers are in and before any body byte is read.
public enum Admission: Sendable {
    /// Read the body, then call ``HTTPHandler/handle(_:)``.
    case proceed
    /// Read the body, then call ``HTTPHandler/handle(_:)`` with this value in ``HTTPRequest/admission``: what the
    /// admission decided (the route, who called), so that the handler need not decide it again.
    case proceedNoting(any Sendable)
    /// Answer this at once; the body is never read and the connection closes after the answer.
    case refuse(HTTPResponse)
}

/// Answers requests. Called on libmicrohttpd's threads: it must not block.
public protocol HTTPHandler: Sendable {
    /// The reply to a complete request (headers and body in).
    func handle(_ request: borrowing HTTPRequest) -> HTTPReply
    /// The answer to a request that broke a limit; the connection is closed after it.
    func reject(_ violation: RequestLimitViolation) -> HTTPResponse
    /// Decides about a request that announces a body (any method but GET and HEAD, or a GET or HEAD with
    /// `Content-Length` or `Transfer-Encoding`) when its headers are complete and before any body byte is read.
    /// ``HTTPRequest/body`` is empty here. Not called for bodiless GET and HEAD (the hot path).
    /// The default admits everything.
    func admit(_ request: borrowing HTTPRequest) -> Admission
    /// The answer to a request the server refused on its own (see ``RequestRefusal``). The default is an
    /// `application/problem+json` document with `Cache-Control: no-store` (and `Retry-After` for a 503).
    func refuse(_ refusal: RequestRefusal) -> HTTPResponse
    /// Called once when ``HTTPServer/stop()`` begins, after the server stopped accepting connections and
    /// before it waits for requests in flight: answer held (deferred) requests now, e.g. long-polls with 304.
    /// The default does nothing.
    func serverWillStop()
}

extension HTTPHandler {
    public func admit(_ request: borrowing HTTPRequest) -> Admission { .proceed }

    public func refuse(_ refusal: RequestRefusal) -> HTTPResponse { refusal.defaultResponse }

    public func serverWillStop() {}
}

extension RequestRefusal {
    /// An `application/problem+json` (RFC 9457) answer with `Cache-Control: no-store`, and `Retry-After` for 503.
    public var defaultResponse: HTTPResponse {
        var headers = [HTTPHeader("Content-Type", ProblemDocument.mediaType), HTTPHeader("Cache-Control", "no-store")]
        let (title, detail): (String, String) =
            switch self {
            case .malformed(let what): ("Bad Request", what)
            case .transferCodingNotImplemented(let coding):
                ("Not Implemented", "transfer coding '\(coding)' is not implemented (only chunked is)")
            case .targetTooLong(let limit): ("URI Too Long", "the request target exceeds \(limit) bytes")
            case .tooManyQueryParameters(let limit): ("URI Too Long", "the query has more than \(limit) parameters")
            case .bodyBudgetExhausted: ("Service Unavailable", "too many request bodies in flight; retry later")
            case .serverStopping: ("Service Unavailable", "the server is stopping")
            }
        if case .bodyBudgetExhausted(let seconds) = self { headers.append(HTTPHeader("Retry-After", String(seconds))) }
        let document = ProblemDocument(type: "about:blank", title: title, status: status, detail: detail)
        return HTTPResponse(status: status, headers: headers, body: document.json)
    }
}
