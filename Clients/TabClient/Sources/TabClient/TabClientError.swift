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
    /// A file could not be written to the cache directory: the last good layout (the previous copy is intact),
    /// or the install id made on first use (it is used for this run; the next launch makes another).
    case cacheWriteFailed(path: String, reason: String)
    /// ``TabClientConfiguration/environment`` is not an environment name (`[a-z][a-z0-9_-]{0,31}`): the name, and
    /// what is wrong with it.
    case invalidEnvironment(String, reason: String)
    /// ``TabClientConfiguration/installID`` cannot be sent as `X-Install-Id` (at most 128 characters, no control
    /// characters, no space at either end): what is wrong with it (the id itself is not repeated, for logs).
    case invalidInstallID(String)
    /// With ``TabClientConfiguration/signingKeys`` pinned: a layout or manifest (from the network, the cache file or the
    /// bundle) whose signature is missing, by a key not pinned, or does not verify. It is refused and the last good
    /// layout kept.
    case invalidSignature(String)
    /// ``SigningKeys`` given something that is not an Ed25519 public key (or a `/v1/keys` document), or no key.
    case invalidSigningKey(String)
    /// A `…/tabs/manifest` answer that is not a manifest (manifest mode).
    case invalidManifest(String)
    /// The task was cancelled while the request was in flight.
    case cancelled

    /// ``invalidSignature(_:)`` saying where: the reason of a signature refused, else the whole error (a bundled or
    /// cached layout that does not decode is refused as unverifiable too).
    func refused(in place: String) -> TabClientError {
        if case .invalidSignature(let reason) = self { return .invalidSignature("\(place): \(reason)") }
        return .invalidSignature("\(place): \(self)")
    }

    /// The delay the server asked for with `Retry-After`, if any.
    public var retryAfter: Duration? {
        if case .unexpectedStatus(_, _, let delay) = self { return delay }
        return nil
    }

    /// What went wrong, in at most a few hundred bytes with control characters escaped (``Quoting``): an error never
    /// carries a whole answer into a log.
    public var description: String { Quoting.capped(text, Quoting.messageBytes) }

    private var text: String {
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
        case .invalidEnvironment(let name, let reason): return "invalid environment \(String(reflecting: name)): \(reason)"
        case .invalidInstallID(let reason): return "invalid install id: \(reason)"
        case .invalidSignature(let reason): return "refused: \(reason)"
        case .invalidSigningKey(let reason): return "invalid signing key: \(reason)"
        case .invalidManifest(let reason): return "invalid manifest: \(reason)"
        case .cancelled: return "cancelled"
        }
    }
}
