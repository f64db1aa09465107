import Foundation
import Logging
import MicroHTTPD
import ProblemDocument
import TabAccess
import TabLayout
import TabStore

/// The access decision a scoped route's request passes before its handler runs (``Router``): the token
/// (``Credentials``: 401 with its RFC 6750 challenge, or 429 while the address is locked out), then the route's scope
/// on its target (403); each refusal logged and audited, each use of an API token noted.
struct AccessGate: Sendable {
    let credentials: Credentials
    let audit: AuditLog
    /// Where a token's `lastUsedAt` is written.
    let store: any AccessStore
    /// The environment an account's management route touches when the request names none (where writes enter).
    let entryEnvironment: String
    let logger: Logger

    /// The grant behind the request's token, or the refusal (401 with its RFC 6750 challenge, or 429 while its
    /// address is locked out).
    func authenticate(_ request: borrowing HTTPRequest, label: String) -> Result<Grant, AuthRefusal> {
        switch credentials.check(request.header("Authorization"), address: audit.addresses.address(of: request), route: label) {
        case .valid(let grant):
            noteUse(of: grant)
            return .success(grant)
        case .invalid(let refusal): return .failure(AuthRefusal(response: Problem.refused(refusal).response, refusal: refusal))
        case .lockedOut(let seconds):
            return .failure(
                AuthRefusal(
                    response: Problem(
                        .tooManyFailures, detail: "too many failed authentications from this address; retry after \(seconds) s",
                        headers: [HTTPHeader("Retry-After", String(seconds))]
                    ).response, refusal: nil))
        }
    }

    /// The refusal (logged and audited) when `grant` does not reach `scope` on the route's `target`, in the
    /// `{environment}` of the template or else the one the request names (an account's routes: `?environment=`, else
    /// where writes enter; a name that is no environment is the handler's 404, not a refusal here). A route whose
    /// body names its environments (`environmentsInBody`) is checked here on its target alone.
    func refusal(
        _ scope: Scope, on target: AccessTarget, _ match: RouteMatch, grant: Grant, _ request: borrowing HTTPRequest, label: String,
        environmentsInBody: Bool = false
    ) -> AccessRefusal? {
        let named =
            target == .service || target == .everything || environmentsInBody ? nil : request.query("environment") ?? entryEnvironment
        guard let refusal = grant.authorize(Self.accessRequest(scope, target, match, environment: named)) else { return nil }
        logger.warning("access refused", metadata: ["token": "\(grant.name)", "route": "\(label)", "reason": "\(refusal.description)"])
        audit.refuse(refusal, grant: grant, request, account: match.names.contains("account") ? match["account"] : nil)
        return refusal
    }

    /// What a scoped route asks of the grant: its scope on the service, the `{account}` or every account, in the
    /// `{environment}` when the template has one, else in `environment` (an account's routes: `?environment=`).
    static func accessRequest(_ scope: Scope, _ target: AccessTarget, _ match: RouteMatch, environment named: String? = nil)
        -> AccessRequest
    {
        let environment = match.names.contains("environment") ? match["environment"] : named
        switch target {
        case .service: return AccessRequest(scope: scope, target: .service, environment: environment)
        case .account: return AccessRequest(scope: scope, target: .account(match["account"]), environment: environment)
        case .allAccounts: return AccessRequest(scope: scope, target: .allAccounts, environment: environment)
        case .everything: return AccessRequest(scope: scope, target: .everything)
        }
    }

    /// Writes a token's `lastUsedAt`, at most once a minute per token and replica, off the request path.
    private func noteUse(of grant: Grant) {
        guard let id = grant.tokenID, credentials.directory.shouldNoteUse(of: id, now: credentials.monotonicSeconds) else { return }
        let millis = credentials.clock.unixMillis
        Task { [store, logger] in
            do throws(StoreError) {
                try await store.noteTokenUsed(id: id.rawValue, atMillis: millis)
            } catch {
                logger.warning("noting a token's use failed: \(error)")
            }
        }
    }
}

/// A refused authentication and its answer.
struct AuthRefusal: Error {
    let response: HTTPResponse
    /// Why, for the audit log (nil for a lockout's 429, which is no decision about the token).
    let refusal: AccessRefusal?
}

extension Problem {
    /// 401 (`invalid_token`, or a bare challenge without credentials) or 403 (`insufficient_scope` and the scope
    /// needed), with RFC 6750 §3's `WWW-Authenticate`.
    static func refused(_ refusal: AccessRefusal) -> Problem {
        Problem(
            refusal.status == 403 ? .insufficientScope : .unauthorized, detail: refusal.clientDescription,
            headers: [HTTPHeader("WWW-Authenticate", refusal.wwwAuthenticate)])
    }

    /// 422 (or `kind`) with every refused field at its JSON Pointer.
    static func invalidFields(_ error: InvalidFields, what: String, kind: ProblemKind = .invalidFields) -> Problem {
        let count = error.errors.count
        return Problem(
            kind, detail: "the \(what) has \(count) problem\(count == 1 ? "" : "s") (see errors)",
            errors: error.errors)
    }
}
