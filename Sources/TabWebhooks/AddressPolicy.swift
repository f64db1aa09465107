/// Which addresses a webhook may be delivered to (OWASP's SSRF prevention cheat sheet, "application layer":
/// validate every resolved address, refuse the ranges that reach the server itself, its network or its cloud's
/// metadata service). An operator's allowlist of blocks admits addresses that would otherwise be refused.
public struct AddressPolicy: Sendable, Equatable {
    /// A kind of address that is refused.
    public enum Range: String, Sendable, Equatable {
        /// `0.0.0.0/8`, `::`.
        case unspecified = "unspecified"
        /// `127.0.0.0/8`, `::1`.
        case loopback = "loopback"
        /// RFC 1918 `10/8`, `172.16/12`, `192.168/16`; RFC 4193 ULA `fc00::/7`; site-local `fec0::/10`; local NAT64
        /// `64:ff9b:1::/48`.
        case `private` = "private"
        /// `169.254.0.0/16` (cloud metadata at 169.254.169.254), `fe80::/10`.
        case linkLocal = "link-local"
        /// RFC 6598 carrier-grade NAT `100.64.0.0/10`.
        case sharedAddressSpace = "shared address space (CGNAT)"
        /// `224.0.0.0/4`, `ff00::/8`.
        case multicast = "multicast"
        /// `255.255.255.255`.
        case broadcast = "broadcast"
        /// `240.0.0.0/4` (future use), `192.0.0.0/24` (IETF protocol assignments), `198.18.0.0/15` (benchmarking),
        /// `100::/64` (discard), Teredo `2001::/32` (its IPv4 end cannot be checked).
        case reserved = "reserved"
    }

    /// Blocks admitted whatever range they are in.
    public let allowlist: [CIDR]

    /// A policy that refuses every range above except what `allowlist` admits.
    public init(allowlist: [CIDR] = []) { self.allowlist = allowlist }

    /// `--webhook-allow-private`: everything admitted (for tests and private networks).
    public static let allowEverything = AddressPolicy(allowlist: [CIDR("0.0.0.0/0")!, CIDR("::/0")!])  // Valid literals.

    /// The range that refuses `address`, or nil when it may be delivered to. An IPv6 form that carries an IPv4
    /// address (mapped, compatible, NAT64, 6to4) is judged by that IPv4 address too.
    public func refusal(for address: IPAddress) -> Range? {
        guard let range = Self.range(of: address) else { return nil }
        let admitted = allowlist.contains { $0.contains(address) || address.embeddedIPv4.map($0.contains) == true }
        return admitted ? nil : range
    }

    /// The refused range `address` is in, whatever the allowlist says; nil for a public address.
    public static func range(of address: IPAddress) -> Range? {
        let b = address.bytes
        if address.isIPv4 {
            switch (b[0], b[1], b[2]) {
            case (0, _, _): return .unspecified
            case (10, _, _), (172, 16...31, _), (192, 168, _): return .private
            case (100, 64...127, _): return .sharedAddressSpace
            case (127, _, _): return .loopback
            case (169, 254, _): return .linkLocal
            case (192, 0, 0), (198, 18...19, _): return .reserved
            case (224...239, _, _): return .multicast
            case (255, 255, 255) where b[3] == 255: return .broadcast
            case (240...255, _, _): return .reserved
            default: return nil
            }
        }
        if b[0..<15].allSatisfy({ $0 == 0 }) {
            if b[15] == 0 { return .unspecified }
            if b[15] == 1 { return .loopback }
        }
        if let v4 = address.embeddedIPv4 { return range(of: v4) }
        switch (b[0], b[1]) {
        case (0xFC...0xFD, _): return .private
        case (0xFE, 0x80...0xBF): return .linkLocal
        case (0xFE, 0xC0...0xFF): return .private
        case (0xFF, _): return .multicast
        default: break
        }
        if b[0..<6] == [0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01] { return .private }
        if b[0..<8] == [0x01, 0x00, 0, 0, 0, 0, 0, 0] { return .reserved }
        if b[0..<4] == [0x20, 0x01, 0x00, 0x00] { return .reserved }
        return nil
    }

    /// Where a delivery to `url` may connect: every address the host resolves to, each checked. The caller
    /// connects to one of these addresses (not to the name again), so a DNS answer that changes after the check
    /// cannot move the delivery. Called when a webhook is made and again before every attempt.
    /// - Throws: `WebhookAddressError.unresolvable` when the name has no address, `.refused` when any address is
    ///   in a refused range (one bad address refuses the URL: the client might pick it).
    public func destination(for url: WebhookURL, resolver: some HostResolver) async throws(WebhookAddressError) -> Destination {
        let addresses: [IPAddress]
        switch url.host {
        case .address(let address): addresses = [address]
        case .name(let name): addresses = try await resolver.addresses(of: name)
        }
        guard !addresses.isEmpty else { throw .unresolvable(host: url.hostText, reason: "no addresses") }
        for address in addresses {
            if let range = refusal(for: address) { throw .refused(host: url.hostText, address: address, range: range) }
        }
        return Destination(url: url, addresses: addresses)
    }
}

/// A checked URL and the addresses it may connect to.
public struct Destination: Sendable, Equatable {
    /// The URL (its host for `Host` and TLS's SNI and certificate check).
    public let url: WebhookURL
    /// The addresses checked, in the resolver's order.
    public let addresses: [IPAddress]
}

/// Why a webhook URL cannot be delivered to (422 when a webhook is made; a failed attempt at delivery time).
public enum WebhookAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL is not one a webhook may have.
    case invalidURL(String)
    /// The host name does not resolve.
    case unresolvable(host: String, reason: String)
    /// The host is, or resolves to, an address in a refused range.
    case refused(host: String, address: IPAddress, range: AddressPolicy.Range)

    public var description: String {
        switch self {
        case .invalidURL(let reason): reason
        case .unresolvable(let host, let reason): "'\(host)' does not resolve: \(reason)"
        case .refused(let host, let address, let range):
            host == address.description
                ? "\(address) is a \(range.rawValue) address; webhooks may not be delivered there"
                // What a name resolves to stays unsaid: the caller may be probing the server's network.
                : "'\(host)' resolves to a private address; webhooks may not be delivered there"
        }
    }
}
