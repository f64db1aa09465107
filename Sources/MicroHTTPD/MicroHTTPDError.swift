/// Why the HTTP server could not do what was asked.
public enum MicroHTTPDError: Error, Equatable, CustomStringConvertible {
    /// `host` is not an IPv4 or IPv6 address literal.
    case invalidHost(String)
    /// libmicrohttpd refused to start (port in use, no permission, bad option, or a certificate or key that
    /// GnuTLS could not load).
    case startFailed(host: String, port: UInt16)
    /// libmicrohttpd could not build a response object (out of memory).
    case responseCreationFailed
    /// HTTPS was asked for, but this libmicrohttpd was built without TLS support.
    case tlsUnsupported
    /// A certificate without a private key, or a key without a certificate.
    case tlsIncomplete
    /// ``HTTPServer/reloadCertificate(_:privateKey:)`` on a server that serves plain HTTP or has stopped.
    case notServingTLS
    /// The PROXY protocol without a trusted balancer: every connection would be refused.
    case noTrustedPeers
    /// A trusted PROXY protocol peer that is not an IP address or network (`10.0.0.5`, `10.0.0.0/24`).
    case invalidTrustedPeer(String)

    public var description: String {
        switch self {
        case .invalidHost(let host):
            "'\(host)' is not an IP address to listen on (use 0.0.0.0, 127.0.0.1, :: or ::1)"
        case .startFailed(let host, let port):
            "libmicrohttpd could not listen on \(host):\(port) (address in use, not permitted, or an unreadable TLS certificate or key?)"
        case .responseCreationFailed:
            "libmicrohttpd could not create a response object (out of memory)"
        case .tlsUnsupported:
            "this libmicrohttpd was built without TLS (GnuTLS) support: HTTPS is not available"
        case .tlsIncomplete:
            "HTTPS needs both a certificate and its private key"
        case .notServingTLS:
            "the server does not serve HTTPS (or has stopped): there is no certificate to reload"
        case .noTrustedPeers:
            "the PROXY protocol needs the balancers' addresses (trusted peers): without them every connection is refused"
        case .invalidTrustedPeer(let peer):
            "'\(peer)' is not an IP address or network (10.0.0.5, 10.0.0.0/24, 2001:db8::/32) to trust PROXY protocol headers from"
        }
    }
}
