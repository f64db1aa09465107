import Foundation
import Logging
import MicroHTTPD
import TabAccess
import TabStore

/// Access (docs/security.md, "Scoped API tokens" and "The audit log"): API tokens made, listed, revoked and rotated,
/// and the audit log read. The decisions are TabAccess's, the records the store's; each token write updates this
/// replica's ``TokenDirectory`` before it answers and is announced to the others.
struct AccessRoutes: RouteCollection {
    let store: any AccessStore
    /// The store's API tokens as this replica last read them.
    let directory: TokenDirectory
    /// The bootstrap tokens (the last admin API token may be revoked only when there is one).
    let bootstrap: BootstrapTokens
    let audit: AuditLog
    /// The environments a token may name (``ServiceConfiguration/environments``).
    let environments: [String]
    let failures: StoreFailures
    let logger: Logger
    let now: @Sendable () -> Date

    static let routes = tokenRoutes + auditRoutes

    /// API tokens (`admin`).
    static let tokenRoutes: [Route<AccessRoutes>] = [
        Route(
            .post, "/v1/tokens", .scoped(.admin, .service), label: "tokens", touchesStore: true,
            APIOperation(
                "Make a token; its secret is in this answer only.",
                body: .ref("TokenSpec"),
                responses: [
                    (
                        201,
                        APIOperation.json(
                            "The token and its secret (tsk_…), shown once.", .ref("Token"),
                            headers: ["Location": .schema(.string())])
                    )
                ], problems: [400, 413, 422])
        ) { routes, request, match throws(Problem) in try routes.createToken(request, match) },
        Route(
            .get, "/v1/tokens", .scoped(.admin, .service), label: "tokens", touchesStore: true,
            APIOperation(
                "Every token, without secrets, with lastUsedAt and revokedAt.",
                responses: [(200, APIOperation.json("The tokens.", .object(["tokens": .array(.ref("Token"))], required: ["tokens"])))])
        ) { routes, _, match in routes.listTokens(match) },
        Route(
            .get, "/v1/tokens/self", .scoped(.read, .service), label: "token_self",
            APIOperation(
                "The token this request carries: its name, id, scopes (as held and with what they imply), accounts and environments; never a secret.",
                responses: [
                    (
                        200,
                        APIOperation.json(
                            "What the token may do.",
                            .object(
                                [
                                    "name": .string(), "id": APISchema.string().orNull.described("null for a bootstrap token"),
                                    "scopes": .array(.string()),
                                    "implied": APISchema.array(.string()).described("every scope the token holds, implied ones included"),
                                    "accounts": .array(.string()),
                                    "environments": APISchema.array(.string()).orNull.described("null is every environment"),
                                ], required: ["name", "id", "scopes", "implied", "accounts", "environments"]))
                    )
                ])
        ) { _, _, match throws(Problem) in try AccessRoutes.tokenSelf(match) },
        Route(
            .delete, "/v1/tokens/{id}", .scoped(.admin, .service), label: "token", inputs: [.path("id", TokenID.self)],
            touchesStore: true,
            APIOperation(
                "Revoke the token, on every replica within a second.",
                responses: [
                    (204, APIOperation.answer("Revoked."))
                ], problems: [404, 409])
        ) { routes, request, match throws(Problem) in try routes.revokeToken(request, match) },
        Route(
            .post, "/v1/tokens/{id}/rotate", .scoped(.admin, .service), label: "token_rotate", inputs: [.path("id", TokenID.self)],
            touchesStore: true,
            APIOperation(
                "A new secret; the old one stays valid for the overlap (ISO 8601, at most P7D, default none).",
                body: .object(["overlap": APISchema.string().examples("PT1H")], closed: true), bodyRequired: false,
                responses: [
                    (200, APIOperation.json("The token and its new secret, shown once.", .ref("Token")))
                ], problems: [404, 409, 413, 422])
        ) { routes, request, match throws(Problem) in try routes.rotateToken(request, match) },
    ]

    /// The audit log (`read`; entries the token may read).
    static let auditRoutes: [Route<AccessRoutes>] = [
        Route(
            .get, "/v1/audit", .scoped(.read, .service), label: "audit",
            inputs: [
                .query("after", AuditCursor.self), .query("limit", AuditPageSize.self), .query("account", AuditFilter.self),
                .query("actor", AuditFilter.self),
            ], touchesStore: true,
            APIOperation(
                "The audit log, oldest first: every change and every refused management request (401, 403).",
                responses: [
                    (200, APIOperation.json("One page; follow next.", .ref("AuditPage")))
                ], problems: [400])
        ) { routes, _, match in routes.readAudit(match) }
    ]
}
