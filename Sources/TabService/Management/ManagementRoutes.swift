import MicroHTTPD
import TabAccess

/// The management plane: layouts and their history, strings tables, validation, previews and the change feed,
/// each behind the scope it declares. Writes go through ``Changes``; the drawings and the change feed read its
/// publisher and store.
struct ManagementRoutes: RouteCollection, ManagementOperations {
    let changes: Changes

    static let layoutRoutes: [Route<ManagementRoutes>] = [
        Route(
            .get, "/v1/accounts/{account}/layout", .scoped(.read, .account), label: "layout",
            APIOperation(
                "The current source, byte for byte as uploaded.",
                responses: [
                    (
                        200,
                        """
                        description: The source as uploaded (any JSON or property list, seed 000's array included).
                        headers:
                          ETag: {$ref: '#/components/headers/ETag'}
                          Layout-Version: {$ref: '#/components/headers/LayoutVersion'}
                        content:
                          application/json: {schema: {}}
                          application/x-plist: {schema: {}}
                          application/xml: {schema: {}}
                          text/xml: {schema: {}}
                          application/octet-stream: {schema: {}}
                        """
                    ),
                    (400, APIOperation.problem), (404, APIOperation.problem),
                ])
        ) { routes, request, match in routes.readLayoutRoute(request, match) },
        Route(
            .put, "/v1/accounts/{account}/layout", .scoped(.write, .account), label: "layout",
            APIOperation(
                "Store a new version (or, with dryRun=true, only compile it).",
                parameters: [
                    ifMatch, ifNoneMatchStar, "{name: dryRun, in: query, schema: {type: boolean}}",
                    "{name: Change-Message, in: header, schema: {type: string}}",
                ] + writeOptionParameters,
                requestBody: sourceBody,
                responses: [
                    (200, written), (201, written), (202, heldForReview), (400, APIOperation.problem), (403, APIOperation.problem),
                    (412, APIOperation.problem), (413, APIOperation.problem), (415, APIOperation.problem), (422, APIOperation.problem),
                    (428, APIOperation.problem),
                ])
        ) { routes, request, match in routes.putLayoutRoute(request, match) },
        Route(
            .patch, "/v1/accounts/{account}/layout", .scoped(.write, .account), label: "layout",
            APIOperation(
                "JSON Patch (RFC 6902) or JSON Merge Patch (RFC 7396) on the JSON form of the source.",
                parameters: [ifMatch] + writeOptionParameters,
                requestBody: """
                    required: true
                    content:
                      application/json-patch+json: {schema: {type: array, items: {type: object}}}
                      application/merge-patch+json: {schema: {type: object}}
                    """,
                responses: [
                    (200, written), (202, heldForReview), (400, APIOperation.problem), (403, APIOperation.problem),
                    (404, APIOperation.problem), (412, APIOperation.problem), (415, APIOperation.problem), (422, APIOperation.problem),
                    (428, APIOperation.problem),
                ])
        ) { routes, request, match in routes.patchLayoutRoute(request, match) },
        Route(
            .delete, "/v1/accounts/{account}/layout", .scoped(.write, .account), label: "layout",
            APIOperation(
                "Delete the layout (history kept; the account falls back to default).", parameters: [ifMatch] + writeOptionParameters,
                responses: [
                    (202, heldForReview), (204, "{description: Deleted.}"), (400, APIOperation.problem), (403, APIOperation.problem),
                    (404, APIOperation.problem), (409, APIOperation.problem), (412, APIOperation.problem), (422, APIOperation.problem),
                    (428, APIOperation.problem),
                ])
        ) { routes, request, match in routes.deleteLayoutRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions", .scoped(.read, .account), label: "layout_versions",
            APIOperation(
                "Every version, newest first.",
                parameters: [
                    "{name: before, in: query, schema: {type: integer, minimum: 1}}",
                    "{name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}",
                ],
                responses: [
                    (
                        200,
                        """
                        description: The history.
                        content:
                          application/json: {schema: {$ref: '#/components/schemas/Versions'}}
                        """
                    ),
                    (400, APIOperation.problem), (404, APIOperation.problem),
                ])
        ) { routes, request, match in routes.versionsRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions/{version}", .scoped(.read, .account), label: "layout_version",
            APIOperation(
                "One version's source.",
                responses: [
                    (200, "{description: 'The source, with its Content-Type, ETag and Layout-Version.'}"), (400, APIOperation.problem),
                    (404, APIOperation.problem),
                ])
        ) { routes, request, match in routes.readLayoutRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions/{version}/diff", .scoped(.read, .account), label: "layout_diff",
            APIOperation(
                "Tab-level changes from version `against` (default n-1) to n; text/plain gives one line per change.",
                parameters: ["{name: against, in: query, schema: {type: integer, minimum: 1}}"],
                responses: [
                    (
                        200,
                        """
                        description: The changes.
                        content:
                          application/json: {schema: {type: object}}
                          text/plain: {schema: {type: string}}
                        """
                    ),
                    (400, APIOperation.problem), (404, APIOperation.problem),
                ])
        ) { routes, request, match in routes.diffRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions/{version}/preview.svg", .scoped(.read, .account),
            label: "layout_version_preview",
            APIOperation(
                "Any stored version, a draft too, drawn as tabs/preview.svg draws what apps get (resolved in `environment`).",
                parameters: [
                    "$ref: '#/components/parameters/clientLocale'", "$ref: '#/components/parameters/clientPlatform'",
                    "$ref: '#/components/parameters/clientAppVersion'", "{name: environment, in: query, schema: {type: string}}",
                    "{name: selected, in: query, schema: {type: string}}",
                ],
                responses: [
                    (
                        200,
                        """
                        description: The drawing.
                        content:
                          image/svg+xml: {schema: {type: string}}
                        """
                    ),
                    (400, APIOperation.problem), (404, APIOperation.problem), (422, APIOperation.problem), (503, APIOperation.problem),
                ])
        ) { routes, request, match in routes.versionPreviewRoute(request, match) },
        Route(
            .post, "/v1/accounts/{account}/layout/versions/{version}/restore", .scoped(.write, .account), label: "layout_restore",
            APIOperation(
                "A new version whose content is that version's.", parameters: [ifMatch] + writeOptionParameters,
                responses: [
                    (200, written), (202, heldForReview), (400, APIOperation.problem), (403, APIOperation.problem),
                    (404, APIOperation.problem), (412, APIOperation.problem), (422, APIOperation.problem), (428, APIOperation.problem),
                ])
        ) { routes, request, match in routes.restoreRoute(request, match) },
    ]

    static let routes: [Route<ManagementRoutes>] =
        layoutRoutes + [
            Route(
                .get, "/v1/accounts", .scoped(.read, .service), label: "accounts",
                APIOperation(
                    "Accounts with a layout of their own, by name.",
                    parameters: [
                        "{name: after, in: query, schema: {type: string}}",
                        "{name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}",
                    ],
                    responses: [
                        (
                            200,
                            """
                            description: One page.
                            content:
                              application/json: {schema: {$ref: '#/components/schemas/Accounts'}}
                            """
                        ),
                        (400, APIOperation.problem),
                    ])
            ) { routes, request, match in routes.listAccounts(request, grant: match.grant) },
            Route(
                .post, "/v1/validate", .scoped(.write, .service), label: "validate", changesState: false,
                APIOperation(
                    "Compile a source and store nothing.", requestBody: sourceBody,
                    responses: [
                        (
                            200,
                            """
                            description: The compiled layout (default locale).
                            content:
                              application/json: {schema: {$ref: '#/components/schemas/CompiledLayout'}}
                            """
                        ),
                        (400, APIOperation.problem), (413, APIOperation.problem), (415, APIOperation.problem), (422, APIOperation.problem),
                    ])
            ) { routes, request, _ in routes.validate(request) },
            Route(
                .post, "/v1/preview", .scoped(.write, .service), label: "preview_source", changesState: false,
                APIOperation(
                    "Draw an unsaved source as tabs/preview.svg would, storing nothing.", requestBody: sourceBody,
                    responses: [
                        (
                            200,
                            """
                            description: The drawing.
                            content:
                              image/svg+xml: {schema: {type: string}}
                            """
                        ),
                        (400, APIOperation.problem), (413, APIOperation.problem), (415, APIOperation.problem), (422, APIOperation.problem),
                    ])
            ) { routes, request, _ in routes.previewSource(request) },
            Route(
                .get, "/v1/events", .scoped(.read, .service), label: "events",
                APIOperation(
                    "Server-sent events, one per stored version; Last-Event-ID resumes.",
                    parameters: [
                        "{name: Last-Event-ID, in: header, schema: {type: string}}",
                        "{name: lastEventId, in: query, schema: {type: string}}",
                    ],
                    responses: [
                        (
                            200,
                            """
                            description: Events (text/event-stream).
                            content:
                              text/event-stream: {schema: {type: string}}
                            """
                        ),
                        (400, APIOperation.problem),
                    ])
            ) { routes, request, match in routes.eventStream(request, grant: match.grant) },
            Route(
                .get, "/v1/strings/{locale}", .scoped(.read, .allAccounts), label: "strings",
                APIOperation(
                    "A global strings table as uploaded.",
                    responses: [
                        (200, "{description: 'The table, with its Content-Type and ETag.'}"), (400, APIOperation.problem),
                        (404, APIOperation.problem),
                    ])
            ) { routes, request, match in routes.readStringsRoute(request, match) },
            Route(
                .put, "/v1/strings/{locale}", .scoped(.write, .allAccounts), label: "strings",
                APIOperation(
                    "Store a new version of a global strings table.", parameters: [ifMatch, ifNoneMatchStar] + writeOptionParameters,
                    requestBody: """
                        required: true
                        content:
                          text/plain: {schema: {type: string}}
                          application/json: {schema: {type: object, additionalProperties: {type: string}}}
                        """,
                    responses: [
                        (
                            200,
                            """
                            description: Updated.
                            content:
                              application/json: {schema: {$ref: '#/components/schemas/StringsWritten'}}
                            """
                        ),
                        (
                            201,
                            """
                            description: Created.
                            content:
                              application/json: {schema: {$ref: '#/components/schemas/StringsWritten'}}
                            """
                        ),
                        (202, heldForReview), (400, APIOperation.problem), (403, APIOperation.problem), (412, APIOperation.problem),
                        (415, APIOperation.problem), (422, APIOperation.problem), (428, APIOperation.problem),
                    ])
            ) { routes, request, match in routes.writeStringsRoute(request, match) },
        ]
}

/// The OpenAPI fragments the management plane's routes share (layouts, strings, rollouts and promotion).
protocol ManagementOperations {}

extension ManagementOperations {
    static var ifMatch: String { "$ref: '#/components/parameters/ifMatch'" }
    static var ifNoneMatchStar: String { "$ref: '#/components/parameters/ifNoneMatchStar'" }
    static var written: String { "{$ref: '#/components/responses/Written'}" }
    static var sourceBody: String { "{$ref: '#/components/requestBodies/Source'}" }
    /// `?environment=`, declared once with the client plane's routes.
    static var environmentParameter: String { ClientPlaneRoutes.environmentParameter }

    /// What a write request may choose besides its content (``WriteOptions``): past the builds gate, past review,
    /// and when an approved change request is applied.
    static var writeOptionParameters: [String] {
        [
            "{name: allowIncompatible, in: query, description: 'true: publish though a live build could not open it (deploy).', schema: {type: boolean}}",
            "{name: bypassApproval, in: query, description: 'true: apply at once in a protected environment (admin).', schema: {type: boolean}}",
            "{name: Apply-At, in: header, description: 'RFC 3339: when an approved change request is applied.', schema: {type: string, format: date-time}}",
        ]
    }

    /// A change held for review in a protected environment.
    static var heldForReview: String {
        """
        description: Held for review (a change request).
        headers:
          Location: {schema: {type: string}}
        content:
          application/json: {schema: {type: object, required: [changeRequest]}}
        """
    }
}
