import Foundation
import MicroHTTPD

/// Who the client is: the socket's peer, or, behind a trusted proxy (`--trusted-proxy`), the client the proxy names.
/// Failed logins are counted, refusals audited and long-polls held per this address.
struct ClientAddresses: Sendable {
    /// Peers (IP addresses as text) whose forwarding header names the client.
    let trustedProxies: Set<String>
    /// The one header the trusted proxies write (`--forwarded-header`).
    let forwardedHeader: ServiceConfiguration.ForwardedHeader

    init(trustedProxies: Set<String> = [], forwardedHeader: ServiceConfiguration.ForwardedHeader = .xForwardedFor) {
        self.trustedProxies = trustedProxies
        self.forwardedHeader = forwardedHeader
    }

    /// The client's address: the socket's peer, or, when that peer is a trusted proxy (`--trusted-proxy`), the
    /// right-most address of the one header the proxies write (`--forwarded-header`: `X-Forwarded-For` by default,
    /// or `Forwarded: for=`) that is not itself a trusted proxy, as nginx's `real_ip_recursive` takes it. Entries
    /// left of that are the client's own claims and are not believed; a chain of nothing but trusted proxies gives its
    /// left-most entry. The other header is never read: a proxy that writes none would pass the client's own through.
    func address(of request: borrowing HTTPRequest) -> String {
        let peer = request.clientAddress
        guard trustedProxies.contains(peer) else { return peer }
        var chain: [String] = []
        if forwardedHeader == .xForwardedFor {
            if let forwardedFor = request.headerList("X-Forwarded-For") {
                chain = forwardedFor.split(separator: ",").map { Self.nodeAddress($0.trimmingCharacters(in: " \t")) }
            }
        } else if let forwarded = request.headerList("Forwarded") {
            for element in forwarded.split(separator: ",") {
                for pair in element.split(separator: ";") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    if parts.count == 2, parts[0].trimmingCharacters(in: " \t").lowercased() == "for" {
                        chain.append(Self.nodeAddress(parts[1].trimmingCharacters(in: " \t\"")))
                    }
                }
            }
        }
        chain.removeAll { $0.isEmpty }
        return Self.rightMostUntrusted(chain, trusted: trustedProxies) ?? peer
    }

    /// Walking `chain` from the right, the first address that is not a trusted proxy (the left-most when all are).
    static func rightMostUntrusted(_ chain: [String], trusted: Set<String>) -> String? {
        chain.last { !trusted.contains($0) } ?? chain.first
    }

    /// RFC 7239's node without its port: `192.0.2.1:4711` → `192.0.2.1`, `[2001:db8::1]:4711` → `2001:db8::1`.
    static func nodeAddress(_ node: String) -> String {
        if node.hasPrefix("[") { return String(node.dropFirst().prefix { $0 != "]" }) }
        let colons = node.filter { $0 == ":" }.count
        return colons == 1 ? String(node.prefix { $0 != ":" }) : node
    }
}
