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
                requestBody: """
                    required: true
                    content:
                      application/json: {schema: {$ref: '#/components/schemas/TokenSpec'}}
                    """,
                responses: [
                    (
                        201,
                        """
                        description: The token and its secret (tsk_…), shown once.
                        headers:
                          Location: {schema: {type: string}}
                        content:
                          application/json: {schema: {$ref: '#/components/schemas/Token'}}
                        """
                    ),
                    (400, APIOperation.problem), (413, APIOperation.problem), (422, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.createToken(request, match) },
        Route(
            .get, "/v1/tokens", .scoped(.admin, .service), label: "tokens", touchesStore: true,
            APIOperation(
                "Every token, without secrets, with lastUsedAt and revokedAt.",
                responses: [
                    (
                        200,
                        """
                        description: The tokens.
                        content:
                          application/json:
                            schema: {type: object, required: [tokens], properties: {tokens: {type: array, items: {$ref: '#/components/schemas/Token'}}}}
                        """
                    )
                ])
        ) { routes, _, match in routes.listTokens(match) },
        Route(
            .get, "/v1/tokens/self", .scoped(.read, .service), label: "token_self",
            APIOperation(
                "The token this request carries: its name, id, scopes (as held and with what they imply), accounts and environments; never a secret.",
                responses: [
                    (
                        200,
                        """
                        description: What the token may do.
                        content:
                          application/json:
                            schema:
                              type: object
                              required: [name, id, scopes, implied, accounts, environments]
                              properties:
                                name: {type: string}
                                id: {type: [string, 'null'], description: null for a bootstrap token}
                                scopes: {type: array, items: {type: string}}
                                implied: {type: array, items: {type: string}, description: every scope the token holds, implied ones included}
                                accounts: {type: array, items: {type: string}}
                                environments: {type: [array, 'null'], items: {type: string}, description: null is every environment}
                        """
                    )
                ])
        ) { _, _, match throws(Problem) in try AccessRoutes.tokenSelf(match) },
        Route(
            .delete, "/v1/tokens/{id}", .scoped(.admin, .service), label: "token", inputs: [.path("id", TokenID.self)],
            touchesStore: true,
            APIOperation(
                "Revoke the token, on every replica within a second.",
                responses: [
                    (204, "{description: Revoked.}"), (404, APIOperation.problem),
                    (409, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.revokeToken(request, match) },
        Route(
            .post, "/v1/tokens/{id}/rotate", .scoped(.admin, .service), label: "token_rotate", inputs: [.path("id", TokenID.self)],
            touchesStore: true,
            APIOperation(
                "A new secret; the old one stays valid for the overlap (ISO 8601, at most P7D, default none).",
                requestBody: """
                    content:
                      application/json: {schema: {type: object, properties: {overlap: {type: string, examples: [PT1H]}}, additionalProperties: false}}
                    """,
                responses: [
                    (
                        200,
                        """
                        description: The token and its new secret, shown once.
                        content:
                          application/json: {schema: {$ref: '#/components/schemas/Token'}}
                        """
                    ),
                    (404, APIOperation.problem), (409, APIOperation.problem), (413, APIOperation.problem), (422, APIOperation.problem),
                ])
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
                    (
                        200,
                        """
                        description: One page; follow next.
                        content:
                          application/json: {schema: {$ref: '#/components/schemas/AuditPage'}}
                        """
                    ),
                    (400, APIOperation.problem),
                ])
        ) { routes, _, match in routes.readAudit(match) }
    ]
}
