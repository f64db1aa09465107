import Foundation
import Logging
import MicroHTTPD
import Synchronization
import TabAccess

/// The tokens the service accepts: the bootstrap tokens (`TABSERVER_ADMIN_TOKEN…`, `admin`, kept as hashes) and
/// the API tokens of the store (``TokenDirectory``), checked through TabAccess's one authentication function.
/// Failed attempts are logged (route, address and reason, never token material) and, after repeated failures from
/// one address, refused for a while.
final class Credentials: Sendable {
    private let bootstrap: BootstrapTokens
    /// The store's API tokens as this replica last read them.
    let directory = TokenDirectory()
    private let failures = Mutex<[String: FailureRecord]>([:])
    private let logger: Logger
    /// Failures an address may make within ``window`` before it is refused for ``lockout`` seconds (the default of
    /// ``ServiceConfiguration/authFailuresPerMinute``).
    static let allowedFailures = 10
    private let failureLimit: Int
    static let window: Int64 = 60
    static let lockout: Int64 = 30
    /// Addresses remembered at once (a flood of new addresses cannot grow memory without bound).
    static let trackedAddresses = 4096

    struct FailureRecord {
        var count: Int
        var firstAt: Int64
        var lockedUntil: Int64
    }

    /// - Parameter failureLimit: failures per address and minute before a lockout; 0 never locks out.
    init(tokens: [(name: String, token: String)], failureLimit: Int = Credentials.allowedFailures, logger: Logger) {
        self.failureLimit = failureLimit
        self.bootstrap = BootstrapTokens(tokens)
        self.logger = logger
    }

    /// Whether any bootstrap token is configured (the last admin API token may be revoked only then).
    var bootstrapTokens: BootstrapTokens { bootstrap }

    /// What checking a request's token found.
    enum Outcome: Equatable {
        case valid(Grant)
        /// 401: no token, or one that is unknown, malformed, expired, revoked or retired.
        case invalid(AccessRefusal)
        /// This address failed too often; try again after this many seconds.
        case lockedOut(retryAfter: Int64)
    }

    /// Checks `Authorization: Bearer <token>` at `now`: every bootstrap token's hash and every secret of the
    /// token the id names are compared in full, in constant time.
    ///
    /// A token that verifies is let through whatever its address did: failures are counted per address to slow
    /// guessing (a locked-out address gets 429 for every token that does not verify, and no answer that tells a
    /// wrong token from a locked one), but someone sharing the admin's address (a NAT, an office) cannot lock the
    /// admin out. Tokens are long random secrets, so the lockout is about noise and load, not about entropy.
    func check(_ field: String?, address: String, route: String, at now: Date = Date()) -> Outcome {
        let clock = monotonicSeconds()
        let credential = BearerCredential(authorization: field)
        let refusal: AccessRefusal
        switch Authentication.authenticate(credential, bootstrap: bootstrap, at: now, lookUp: directory.token(id:)) {
        case .success(let grant): return .valid(grant)
        case .failure(let failure): refusal = failure
        }
        if let locked = failures.withLock({ $0[address] }), locked.lockedUntil > clock {
            return .lockedOut(retryAfter: locked.lockedUntil - clock)
        }
        noteFailure(address: address, route: route, now: clock, reason: refusal.description)
        return .invalid(refusal)
    }

    private func noteFailure(address: String, route: String, now: Int64, reason: String) {
        let lockedNow = failures.withLock { table -> Bool in
            if table[address] == nil, table.count >= Self.trackedAddresses {
                table = table.filter { $0.value.lockedUntil > now }
                if table.count >= Self.trackedAddresses { table.removeAll() }
            }
            var record = table[address] ?? FailureRecord(count: 0, firstAt: now, lockedUntil: 0)
            if now - record.firstAt > Self.window { record = FailureRecord(count: 0, firstAt: now, lockedUntil: 0) }
            record.count += 1
            let locks = failureLimit > 0 && record.count >= failureLimit
            if locks { record = FailureRecord(count: 0, firstAt: now, lockedUntil: now + Self.lockout) }
            table[address] = record
            return locks
        }
        logger.warning(
            "authentication failed",
            metadata: ["address": "\(address)", "route": "\(route)", "reason": "\(reason)"])
        if lockedNow {
            logger.warning(
                "authentication refused for \(Self.lockout) s after \(failureLimit) failures",
                metadata: ["address": "\(address)"])
        }
    }
}

/// Seconds on a clock that never goes back.
func monotonicSeconds() -> Int64 { Int64(nanoseconds() / 1_000_000_000) }

extension TabService {
    /// The grant behind the request's token, or the refusal (401 with its RFC 6750 challenge, or 429 while its
    /// address is locked out).
    func authenticate(_ request: borrowing HTTPRequest, label: String) -> Result<Grant, AuthRefusal> {
        switch credentials.check(request.header("Authorization"), address: clientAddress(request), route: label) {
        case .valid(let grant):
            noteUse(of: grant)
            return .success(grant)
        case .invalid(let refusal): return .failure(AuthRefusal(response: Self.refusalResponse(refusal), refusal: refusal))
        case .lockedOut(let seconds):
            return .failure(
                AuthRefusal(
                    response: Problem(
                        .tooManyFailures, detail: "too many failed authentications from this address; retry after \(seconds) s",
                        headers: [HTTPHeader("Retry-After", String(seconds))]
                    ).response, refusal: nil))
        }
    }

    /// 401 (`invalid_token`, or a bare challenge without credentials) or 403 (`insufficient_scope` and the scope
    /// needed), problem+json with RFC 6750 §3's `WWW-Authenticate`.
    static func refusalResponse(_ refusal: AccessRefusal) -> HTTPResponse {
        Problem(
            refusal.status == 403 ? .insufficientScope : .unauthorized, detail: refusal.clientDescription,
            headers: [HTTPHeader("WWW-Authenticate", refusal.wwwAuthenticate)]
        ).response
    }

    /// The client's address: the socket's peer, or, when that peer is a trusted proxy (`--trusted-proxy`), the
    /// right-most address of the one header the proxies write (`--forwarded-header`: `X-Forwarded-For` by default,
    /// or `Forwarded: for=`) that is not itself a trusted proxy, as nginx's `real_ip_recursive` takes it. Entries
    /// left of that are the client's own claims and are not believed; a chain of nothing but trusted proxies gives its
    /// left-most entry. The other header is never read: a proxy that writes none would pass the client's own through.
    func clientAddress(_ request: borrowing HTTPRequest) -> String {
        let peer = request.clientAddress
        guard configuration.trustedProxies.contains(peer) else { return peer }
        var chain: [String] = []
        if configuration.forwardedHeader == .xForwardedFor {
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
        return Self.rightMostUntrusted(chain, trusted: configuration.trustedProxies) ?? peer
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

/// A refused authentication and its answer.
struct AuthRefusal: Error {
    let response: HTTPResponse
    /// Why, for the audit log (nil for a lockout's 429, which is no decision about the token).
    let refusal: AccessRefusal?
}
