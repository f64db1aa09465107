import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns a host name into addresses. Behind a protocol so that the policy's tests can give fixed answers (a name
/// that resolves to a private address, to several, to none) and the service the system's resolver.
public protocol HostResolver: Sendable {
    /// Every address `host` resolves to, IPv4 and IPv6.
    /// - Throws: `WebhookAddressError.unresolvable` when it does not resolve.
    func addresses(of host: String) async throws(WebhookAddressError) -> [IPAddress]
}

/// The system's resolver: `getaddrinfo(3)` (so `/etc/hosts`, `nsswitch.conf` and the configured DNS servers),
/// run on a Dispatch worker since it blocks, never on Swift's cooperative threads.
public struct SystemResolver: HostResolver {
    /// The system resolver.
    public init() {}

    public func addresses(of host: String) async throws(WebhookAddressError) -> [IPAddress] {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[IPAddress], WebhookAddressError>, Never>) in
            DispatchQueue.global().async { continuation.resume(returning: Self.resolve(host)) }
        }
        return try result.get()
    }

    /// `getaddrinfo(host, NULL, {AF_UNSPEC, SOCK_STREAM})`, its answers read as addresses, duplicates dropped.
    static func resolve(_ host: String) -> Result<[IPAddress], WebhookAddressError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { return .failure(.unresolvable(host: host, reason: String(cString: gai_strerror(status)))) }
        defer { freeaddrinfo(list) }  // Pairs with the successful getaddrinfo above.
        var addresses: [IPAddress] = []
        var entry = list
        while let info = entry?.pointee {
            entry = info.ai_next
            guard let socketAddress = info.ai_addr else { continue }
            var address: IPAddress?
            switch info.ai_family {
            case AF_INET:
                address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin_addr) { IPAddress(bytes: Array($0)) }
                }
            case AF_INET6:
                address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { IPAddress(bytes: Array($0)) }
                }
            default: continue
            }
            if let address, !addresses.contains(address) { addresses.append(address) }
        }
        return .success(addresses)
    }
}
