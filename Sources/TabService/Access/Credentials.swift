import Foundation
import Logging
import MicroHTTPD
import Synchronization
import TabAccess
import TabStore
import TabTime

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
    /// What tokens' expiry is checked at (its wall clock) and lockouts are timed on (its monotonic clock).
    let clock: TimeSource
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
    init(
        tokens: [(name: String, token: String)], failureLimit: Int = Credentials.allowedFailures, clock: TimeSource, logger: Logger
    ) {
        self.failureLimit = failureLimit
        self.clock = clock
        self.bootstrap = BootstrapTokens(tokens)
        self.logger = logger
    }

    /// The bootstrap tokens (the last admin API token may be revoked only when there is one).
    var bootstrapTokens: BootstrapTokens { bootstrap }

    /// What checking a request's token found.
    enum Outcome: Equatable {
        case valid(Grant)
        /// 401: no token, or one that is unknown, malformed, expired, revoked or retired.
        case invalid(AccessRefusal)
        /// This address failed too often; try again after this many seconds.
        case lockedOut(retryAfter: Int64)
    }

    /// Checks `Authorization: Bearer <token>` now: every bootstrap token's hash and every secret of the
    /// token the id names are compared in full, in constant time.
    ///
    /// A token that verifies is let through whatever its address did: failures are counted per address to slow
    /// guessing (a locked-out address gets 429 for every token that does not verify, and no answer that tells a
    /// wrong token from a locked one), but someone sharing the admin's address (a NAT, an office) cannot lock the
    /// admin out. Tokens are long random secrets, so the lockout is about noise and load, not about entropy.
    func check(_ field: String?, address: String, route: String) -> Outcome {
        let seconds = monotonicSeconds
        let credential = BearerCredential(authorization: field)
        let refusal: AccessRefusal
        switch Authentication.authenticate(credential, bootstrap: bootstrap, at: clock.date, lookUp: directory.token(id:)) {
        case .success(let grant): return .valid(grant)
        case .failure(let failure): refusal = failure
        }
        if let locked = failures.withLock({ $0[address] }), locked.lockedUntil > seconds {
            return .lockedOut(retryAfter: locked.lockedUntil - seconds)
        }
        noteFailure(address: address, route: route, now: seconds, reason: refusal.description)
        return .invalid(refusal)
    }

    /// Whole seconds on the monotonic clock (what lockouts and the once-a-minute use notes are timed on).
    var monotonicSeconds: Int64 { Int64(clock.nanoseconds / 1_000_000_000) }

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
