import Foundation

/// Everything that can go wrong between a ``TabClient`` and its server, disk or bundle.
public enum TabClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The document is not a layout a tab bar can show; every problem is listed.
    case invalidLayout([LayoutProblem])
    /// The bundled `…/tabs/bundle` document cannot be used.
    case invalidBundle(String)
    /// The server answered a status the client does not accept (4xx, 5xx, or an unexpected one), with the
    /// problem+json `detail` when there was one and the delay `Retry-After` asked for.
    case unexpectedStatus(Int, detail: String?, retryAfter: Duration?)
    /// A `200` without an `ETag`: the client could never revalidate it.
    case missingETag
    /// The request did not complete: no connection, reset, TLS, DNS (the transport's description).
    case transport(String)
    /// No complete answer before the request's deadline.
    case timedOut(seconds: Double)
    /// The last good layout could not be written to the cache directory (the previous copy is intact).
    case cacheWriteFailed(path: String, reason: String)
    /// The task was cancelled while the request was in flight.
    case cancelled

    /// The delay the server asked for with `Retry-After`, if any.
    public var retryAfter: Duration? {
        if case .unexpectedStatus(_, _, let delay) = self { return delay }
        return nil
    }

    public var description: String {
        switch self {
        case .invalidLayout(let problems):
            return "invalid layout: " + problems.map(\.description).joined(separator: "; ")
        case .invalidBundle(let reason): return "invalid bundle: \(reason)"
        case .unexpectedStatus(let status, let detail, let retryAfter):
            var text = "HTTP \(status)"
            if let detail { text += ": \(detail)" }
            if let retryAfter { text += " (retry after \(retryAfter))" }
            return text
        case .missingETag: return "the server answered 200 without an ETag"
        case .transport(let reason): return "no answer: \(reason)"
        case .timedOut(let seconds): return "no answer within \(seconds) s"
        case .cacheWriteFailed(let path, let reason): return "could not store \(path): \(reason)"
        case .cancelled: return "cancelled"
        }
    }
}
