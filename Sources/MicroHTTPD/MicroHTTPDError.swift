/// Why the HTTP server could not do what was asked.
public enum MicroHTTPDError: Error, Equatable, CustomStringConvertible {
    /// `host` is not an IPv4 or IPv6 address literal.
    case invalidHost(String)
    /// libmicrohttpd refused to start (port in use, no permission, bad option).
    case startFailed(host: String, port: UInt16)
    /// libmicrohttpd could not build a response object (out of memory).
    case responseCreationFailed

    public var description: String {
        switch self {
        case .invalidHost(let host):
            "'\(host)' is not an IP address to listen on (use 0.0.0.0, 127.0.0.1, :: or ::1)"
        case .startFailed(let host, let port):
            "libmicrohttpd could not listen on \(host):\(port) (address in use or not permitted?)"
        case .responseCreationFailed:
            "libmicrohttpd could not create a response object (out of memory)"
        }
    }
}
