import MicroHTTPD
import TabAccess

/// The management plane: layouts and their history, strings tables, validation, previews and the change feed,
/// each behind the scope it declares. Writes go through ``Changes``; the drawings and the change feed read its
/// publisher and store.
struct ManagementRoutes: RouteCollection, ManagementOperations {
    let changes: Changes

    /// What `PUT …/layout` reads besides its body.
    static let putLayoutInputs: [RouteInput] = {
        let options: [RouteInput] = [.query("dryRun", OptIn.self), .header("Change-Message", String.self)] + writeOptions
        return [account] + preconditions + options + [environment, publish]
    }()

    static let layoutRoutes: [Route<ManagementRoutes>] = [
        Route(
            .get, "/v1/accounts/{account}/layout", .scoped(.read, .account), label: "layout", inputs: [account, environment],
            touchesStore: true,
            APIOperation(
                "The current source, byte for byte as uploaded.",
                responses: [
                    (
                        200,
                        APIOperation.answer(
                            "The source as uploaded (any JSON or property list, seed 000's array included).",
                            [
                                "application/json": .any, "application/x-plist": .any, "application/xml": .any, "text/xml": .any,
                                "application/octet-stream": .any,
                            ],
                            headers: [
                                "ETag": .component("ETag"),
                                "Layout-Version": .component("LayoutVersion"),
                            ])
                    )
                ], problems: [400, 404])
        ) { routes, _, match throws(Problem) in try routes.readLayoutRoute(match) },
        Route(
            .put, "/v1/accounts/{account}/layout", .scoped(.write, .account), label: "layout",
            inputs: putLayoutInputs, touchesStore: true,
            APIOperation(
                "Store a new version (or, with dryRun=true, only compile it).", requestBody: sourceBody,
                responses: [
                    (200, written), (201, written), (202, heldForReview),
                ], problems: [400, 403, 409, 412, 413, 415, 422, 428])
        ) { routes, request, match throws(Problem) in try routes.putLayoutRoute(request, match) },
        Route(
            .patch, "/v1/accounts/{account}/layout", .scoped(.write, .account), label: "layout",
            inputs: [account] + preconditions + writeOptions + [environment, publish], touchesStore: true,
            APIOperation(
                "JSON Patch (RFC 6902) or JSON Merge Patch (RFC 7396) on the JSON form of the source.",
                requestBody: APIOperation.body([
                    "application/json-patch+json": .array(.anyObject), "application/merge-patch+json": .anyObject,
                ]),
                responses: [
                    (200, written), (202, heldForReview),
                ], problems: [400, 403, 404, 412, 415, 422, 428])
        ) { routes, request, match throws(Problem) in try routes.patchLayoutRoute(request, match) },
        Route(
            .delete, "/v1/accounts/{account}/layout", .scoped(.write, .account), label: "layout",
            inputs: [account] + preconditions + writeOptions + [environment], touchesStore: true,
            APIOperation(
                "Delete the layout (history kept; the account falls back to default).",
                responses: [
                    (202, heldForReview), (204, APIOperation.answer("Deleted.")),
                ], problems: [400, 403, 404, 409, 412, 422, 428])
        ) { routes, _, match throws(Problem) in try routes.deleteLayoutRoute(match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions", .scoped(.read, .account), label: "layout_versions",
            inputs: [account, .query("before", VersionCursor.self), .query("limit", ListPageSize.self)], touchesStore: true,
            APIOperation(
                "Every version, newest first.",
                responses: [
                    (200, APIOperation.json("The history.", .ref("Versions")))
                ], problems: [400, 404])
        ) { routes, _, match in routes.versionsRoute(match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions/{version}", .scoped(.read, .account), label: "layout_version",
            inputs: [account, version, environment], touchesStore: true,
            APIOperation(
                "One version's source.",
                responses: [
                    (200, APIOperation.answer("The source, with its Content-Type, ETag and Layout-Version."))
                ], problems: [400, 404])
        ) { routes, _, match throws(Problem) in try routes.readLayoutRoute(match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions/{version}/diff", .scoped(.read, .account), label: "layout_diff",
            inputs: [account, version, .query("against", VersionCursor.self)], touchesStore: true,
            APIOperation(
                "Tab-level changes from version `against` (default n-1) to n; text/plain gives one line per change.",
                responses: [
                    (
                        200, APIOperation.answer("The changes.", ["application/json": .anyObject, "text/plain": .string()])
                    )
                ], problems: [400, 404])
        ) { routes, request, match in routes.diffRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/versions/{version}/preview.svg", .scoped(.read, .account),
            label: "layout_version_preview", inputs: [account, version, environment] + drawingTargets, touchesStore: true,
            APIOperation(
                "Any stored version, a draft too, drawn as tabs/preview.svg draws what apps get (resolved in `environment`).",
                responses: [
                    (
                        200, drawing
                    )
                ], problems: [400, 404, 422, 503])
        ) { routes, request, match throws(Problem) in try routes.versionPreviewRoute(request, match) },
        Route(
            .post, "/v1/accounts/{account}/layout/versions/{version}/restore", .scoped(.write, .account), label: "layout_restore",
            inputs: [account, version] + preconditions + writeOptions + [environment], touchesStore: true,
            APIOperation(
                "A new version whose content is that version's.",
                responses: [
                    (200, written), (202, heldForReview),
                ], problems: [400, 403, 404, 412, 422, 428])
        ) { routes, _, match throws(Problem) in try routes.restoreRoute(match) },
    ]

    static let routes: [Route<ManagementRoutes>] =
        layoutRoutes + [
            Route(
                .get, "/v1/accounts", .scoped(.read, .service), label: "accounts",
                inputs: [.query("after", String.self), .query("limit", ListPageSize.self), environment],
                APIOperation(
                    "Accounts with a layout of their own, by name.",
                    responses: [
                        (200, APIOperation.json("One page.", .ref("Accounts")))
                    ], problems: [400])
            ) { routes, _, match throws(Problem) in try routes.listAccounts(match) },
            Route(
                .post, "/v1/validate", .scoped(.write, .service), label: "validate", changesState: false,
                APIOperation(
                    "Compile a source and store nothing.", requestBody: sourceBody,
                    responses: [
                        (200, APIOperation.json("The compiled layout (default locale).", .ref("CompiledLayout")))
                    ], problems: [400, 413, 415, 422])
            ) { routes, request, _ throws(Problem) in try routes.validate(request) },
            Route(
                .post, "/v1/preview", .scoped(.write, .service), label: "preview_source", changesState: false, inputs: drawingTargets,
                APIOperation(
                    "Draw an unsaved source as tabs/preview.svg would, storing nothing.", requestBody: sourceBody,
                    responses: [
                        (
                            200, drawing
                        )
                    ], problems: [400, 413, 415, 422])
            ) { routes, request, match throws(Problem) in try routes.previewSource(request, match) },
            Route(
                .get, "/v1/events", .scoped(.read, .service), label: "events",
                inputs: [.header("Last-Event-ID", EventPosition.self), .query("lastEventId", EventPosition.self)],
                APIOperation(
                    "Server-sent events, one per stored version; Last-Event-ID resumes.",
                    responses: [
                        (
                            200, APIOperation.answer("Events (text/event-stream).", ["text/event-stream": .string()])
                        )
                    ], problems: [400])
            ) { routes, _, match in routes.eventStream(match) },
            Route(
                .get, "/v1/strings/{locale}", .scoped(.read, .allAccounts), label: "strings", inputs: [locale, environment],
                APIOperation(
                    "A global strings table as uploaded.",
                    responses: [
                        (200, APIOperation.answer("The table, with its Content-Type and ETag."))
                    ], problems: [400, 404])
            ) { routes, _, match throws(Problem) in try routes.readStringsRoute(match) },
            Route(
                .put, "/v1/strings/{locale}", .scoped(.write, .allAccounts), label: "strings",
                inputs: [locale] + preconditions + writeOptions + [environment], touchesStore: true,
                APIOperation(
                    "Store a new version of a global strings table.",
                    requestBody: APIOperation.body(["text/plain": .string(), "application/json": .object(additionalProperties: .string())]),
                    responses: [
                        (200, APIOperation.json("Updated.", .ref("StringsWritten"))),
                        (201, APIOperation.json("Created.", .ref("StringsWritten"))), (202, heldForReview),
                    ], problems: [400, 403, 412, 415, 422, 428])
            ) { routes, request, match throws(Problem) in try routes.writeStringsRoute(request, match) },
        ]
}

/// The OpenAPI fragments the management plane's routes share (layouts, strings, rollouts and promotion).
protocol ManagementOperations {}

extension ManagementOperations {
    static var written: String { APIOperation.response("Written") }
    static var sourceBody: String { APIOperation.requestBody("Source") }
    static var account: RouteInput { ManagementInputs.accountPath }
    static var version: RouteInput { ManagementInputs.versionPath }
    static var locale: RouteInput { ManagementInputs.localePath }
    static var environment: RouteInput { ManagementInputs.environmentQuery }
    static var publish: RouteInput { ManagementInputs.publishQuery }
    static var preconditions: [RouteInput] { ManagementInputs.preconditions }
    static var writeOptions: [RouteInput] { ManagementInputs.writeOptions }
    static var drawingTargets: [RouteInput] { ManagementInputs.drawingTargets }

    /// A change held for review in a protected environment.
    static var heldForReview: String {
        APIOperation.json(
            "Held for review (a change request).", .object(required: ["changeRequest"]),
            headers: ["Location": .schema(.string())])
    }

    /// An SVG drawing.
    static var drawing: String { APIOperation.answer("The drawing.", ["image/svg+xml": .string()]) }
}
