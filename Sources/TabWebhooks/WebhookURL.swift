/// A webhook's `url`, parsed strictly so that what is checked is what is connected to: `http` or `https`, a host
/// (a DNS name, a dotted-quad IPv4 address or a bracketed IPv6 address), an optional port, and a path and query.
/// Refused: other schemes, user information (`user:pass@`), percent-encoding, backslashes, whitespace or
/// controls anywhere, non-ASCII host names (use their punycode form), and hosts that other parsers would read
/// as numbers (`2130706433`, `0x7f.1`, `017.0.0.1`).
public struct WebhookURL: Sendable, Equatable, CustomStringConvertible {
    /// The host, as a name to resolve or an address.
    public enum Host: Sendable, Equatable {
        /// A DNS name, lower-cased.
        case name(String)
        /// A literal address.
        case address(IPAddress)
    }

    /// `http` or `https`.
    public let scheme: String
    /// The host.
    public let host: Host
    /// The port, the scheme's default when none is written.
    public let port: Int
    /// The request target: path and query (`/` when there is no path); the fragment is dropped.
    public let target: String

    /// The URL `text`.
    /// - Throws: `WebhookAddressError.invalidURL` saying what is wrong.
    public init(_ text: String) throws(WebhookAddressError) {
        func invalid(_ reason: String) -> WebhookAddressError { .invalidURL("'\(text)' is not a webhook URL: \(reason)") }
        guard text.utf8.count <= 2048 else { throw invalid("longer than 2048 bytes") }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else {
            throw invalid("spaces, controls, backslashes and non-ASCII characters are not allowed (percent-encode them in the path)")
        }
        guard let schemeEnd = text.range(of: "://") else { throw invalid("it has no scheme (http:// or https://)") }
        scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { throw invalid("only http and https are allowed") }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = rest[authorityEnd...]
        if let fragment = path.firstIndex(of: "#") { path = path[..<fragment] }
        target = path.isEmpty ? "/" : (path.first == "?" ? "/" + path : String(path))
        guard !authority.contains("@") else { throw invalid("credentials in URLs are not allowed") }
        guard !authority.contains("%") else { throw invalid("percent-encoding in the host is not allowed") }

        var hostText = authority[...]
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("an IPv6 address must end with ']'") }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after the IPv6 address") }
                portText = after.dropFirst()
            }
            guard let address = IPAddress(hostText), !address.isIPv4 else { throw invalid("'\(hostText)' is not an IPv6 address") }
            host = .address(address)
        } else {
            if let colon = authority.lastIndex(of: ":") {
                hostText = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            }
            let name = hostText.lowercased()
            if let address = IPAddress(name), address.isIPv4 {
                host = .address(address)
            } else {
                host = .name(try Self.checkedName(name, invalid: invalid))
            }
        }
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let port = Int(portText), (1...65535).contains(port)
            else { throw invalid("the port must be a number from 1 to 65535") }
            self.port = port
        } else {
            port = scheme == "https" ? 443 : 80
        }
    }

    /// The host as written in `Host` and checked by TLS: the name, or the address (IPv6 in brackets).
    public var hostText: String {
        switch host {
        case .name(let name): name
        case .address(let address): address.isIPv4 ? address.description : "[\(address)]"
        }
    }

    /// The URL in normal form: scheme and host lower-cased, default port omitted, no fragment.
    public var description: String {
        let defaultPort = scheme == "https" ? 443 : 80
        return "\(scheme)://\(hostText)\(port == defaultPort ? "" : ":\(port)")\(target)"
    }

    /// A DNS name of letters, digits, `-` and `_` in labels of 1 to 63 (not starting or ending with `-`), 253 at most, an optional final dot; and
    /// not numeric-looking (the last label all digits or `0x…`), which resolvers would take as an IPv4 number.
    private static func checkedName(_ name: String, invalid: (String) -> WebhookAddressError) throws(WebhookAddressError) -> String {
        var labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1, labels.last == "" { labels.removeLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { throw invalid("the host name is empty or too long") }
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-",
                label.utf8.allSatisfy({
                    (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                })
            else { throw invalid("'\(name)' is not a host name") }
        }
        let last = labels.last ?? ""
        if last.utf8.allSatisfy({ (0x30...0x39).contains($0) }) || last.hasPrefix("0x") {
            throw invalid("'\(name)' looks like a number; write an IPv4 address as four decimal octets")
        }
        return name
    }
}
