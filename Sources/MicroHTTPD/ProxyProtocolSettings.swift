#if canImport(Glibc)
    import Glibc
#endif

/// Connections begin with a PROXY protocol header (version 1 or 2), written by a layer-4 balancer in front of the
/// server (HAProxy `send-proxy-v2`, a cloud network load balancer): the address it names is the client's. Only
/// ``trustedPeers`` may send one; a connection from any other address is closed unanswered, as is one whose header is
/// malformed or not whole within ``headerDeadlineSeconds``.
public struct ProxyProtocolSettings: Sendable {
    /// The balancers' addresses (`10.0.0.5`, `2001:db8::5`) or networks (`10.0.0.0/24`) as given.
    public let trustedPeers: [String]
    /// How long a connection's header may take to arrive, in seconds.
    public var headerDeadlineSeconds: Double
    /// Threads that accept connections and read their headers (each waits on one header at a time, so this many
    /// peers that stall keep no other connection waiting for longer than the deadline).
    public var threads: Int
    let networks: [TrustedNetwork]

    /// - Throws: ``MicroHTTPDError/noTrustedPeers`` for an empty list, ``MicroHTTPDError/invalidTrustedPeer(_:)``
    ///   for an entry that is not an IP address or network.
    public init(trustedPeers: [String], headerDeadlineSeconds: Double = 5, threads: Int = 4) throws(MicroHTTPDError) {
        guard !trustedPeers.isEmpty else { throw .noTrustedPeers }
        var networks: [TrustedNetwork] = []
        for peer in trustedPeers {
            guard let network = TrustedNetwork(peer) else { throw .invalidTrustedPeer(peer) }
            networks.append(network)
        }
        self.trustedPeers = trustedPeers
        self.networks = networks
        self.headerDeadlineSeconds = headerDeadlineSeconds
        self.threads = max(1, threads)
    }

    /// Whether `address` (network order: 4 bytes for IPv4, 16 for IPv6) is a trusted peer's. An IPv4-mapped IPv6
    /// address (`::ffff:10.0.0.5`, what an IPv6 socket sees of an IPv4 peer) is its IPv4 address.
    func trusts(_ address: [UInt8]) -> Bool {
        let address =
            address.count == 16 && address.prefix(12).elementsEqual(TrustedNetwork.ipv4MappedPrefix) ? Array(address.suffix(4)) : address
        return networks.contains { $0.contains(address) }
    }
}

/// An address or a network (`address/prefix length`) in network order.
struct TrustedNetwork: Sendable {
    static let ipv4MappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
    let bytes: [UInt8]
    let prefixLength: Int

    init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        var buffer = [UInt8](repeating: 0, count: 16)
        let address = String(parts[0])
        if buffer.withUnsafeMutableBytes({ inet_pton(AF_INET, address, $0.baseAddress) }) == 1 {
            buffer = Array(buffer.prefix(4))
        } else if buffer.withUnsafeMutableBytes({ inet_pton(AF_INET6, address, $0.baseAddress) }) != 1 {
            return nil
        }
        if buffer.count == 16, buffer.prefix(12).elementsEqual(Self.ipv4MappedPrefix) { buffer = Array(buffer.suffix(4)) }
        let bits = buffer.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bits).contains(length) else { return nil }
            prefixLength = length
        } else {
            prefixLength = bits
        }
        bytes = buffer
    }

    /// Whether `address` (of the same length as ``bytes``) lies in the network.
    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == bytes.count else { return false }
        var left = prefixLength
        for index in bytes.indices where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            guard address[index] & mask == bytes[index] & mask else { return false }
            left -= 8
        }
        return true
    }
}
