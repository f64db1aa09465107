import MicroHTTPD
import TabDelivery

/// Environments and rollouts (docs/rollouts.md): a layout's rollout and Alertmanager's alerts, behind the `deploy` scope.
struct RolloutRoutes: RouteCollection, ManagementOperations {
    /// The promotion and rollout commands, the builds gate and review.
    let changes: Changes
    /// Where refused rollbacks and promotions beyond the token's environments are recorded.
    let audit: AuditLog

    static let rolloutAnswer = APIOperation.json(
        "The rollout.",
        .object(
            [
                "state": .string(values: rolloutStates), "served": .object(required: ["candidate", "stable"]),
                "guard": APISchema.anyObject.orNull, "health": .anyObject,
                "history": .array(
                    .object(
                        [
                            "change": .string(values: [
                                "scheduled", "started", "stepped", "raised", "paused", "resumed", "completed", "rolledBack",
                            ]),
                            "state": .string(values: rolloutStates),
                        ], required: ["at", "author", "change", "state", "percent", "message"])),
            ],
            required: [
                "id", "environment", "version", "stableVersion", "percent", "steps", "step", "nextStepAt", "state", "seed", "startedAt",
                "served", "history",
            ]))

    /// The states a rollout is in.
    static let rolloutStates = ["scheduled", "running", "paused", "completed", "rolledBack"]

    static let rolloutRoutes: [Route<RolloutRoutes>] = [
        Route(
            .post, "/v1/accounts/{account}/layout/promote", .scoped(.deploy, .account), label: "layout_promote",
            inputs: [account] + preconditions + writeOptions, touchesStore: true, environmentsInBody: true,
            APIOperation(
                "Point an environment at the version another points at (to defaults to the next after from); with rollout, gradually.",
                body: .object(["from": .string(), "to": .string(), "rollout": .anyObject], required: ["from"]),
                responses: [
                    (200, written), (201, written), (202, heldForReview),
                ], problems: [403, 404, 409, 412, 413, 422, 428])
        ) { routes, request, match throws(Problem) in try routes.promoteRoute(request, match) },
        Route(
            .post, "/v1/strings/{locale}/promote", .scoped(.deploy, .allAccounts), label: "strings_promote",
            inputs: [locale] + preconditions + writeOptions, touchesStore: true, environmentsInBody: true,
            APIOperation(
                "Point an environment at the version of a strings table another points at (to defaults to the next after from).",
                body: .object(["from": .string(), "to": .string()], required: ["from"]),
                responses: [
                    (
                        200,
                        APIOperation.json("The table the environment points at now.", .object(required: ["locale", "version", "etag"]))
                    ), (202, heldForReview),
                ], problems: [403, 404, 412, 413, 422, 428])
        ) { routes, request, match throws(Problem) in try routes.promoteStringsRoute(request, match) },
        Route(
            .post, "/v1/accounts/{account}/layout/rollout", .scoped(.deploy, .account), label: "layout_rollout",
            inputs: [account, environment] + preconditions + writeOptions, touchesStore: true,
            APIOperation(
                "Start a rollout of a version to a growing share of installs (steps with holds, or a fixed percent).",
                body: .object(
                    [
                        "version": .integer(minimum: 1), "percent": .number(minimum: 0, maximum: 100),
                        "steps": .array(.object(["percent": .number(), "hold": .string()], required: ["percent", "hold"])),
                        "startAt": .string(format: "date-time"), "seed": .string(), "installs": .array(.string()),
                        "guard": .object(
                            [
                                "kind": .string(values: ["tabFailed", "reverted", "refused", "failures"]),
                                "action": .string(values: ["pause", "rollback"]),
                            ], required: ["kind"]),
                    ], required: ["version"]),
                responses: [
                    (201, rolloutAnswer), (202, heldForReview),
                ], problems: [403, 404, 409, 412, 413, 422, 428])
        ) { routes, request, match throws(Problem) in try routes.startRolloutRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/rollout", .scoped(.read, .account), label: "layout_rollout",
            inputs: [account, environment], touchesStore: true,
            APIOperation(
                "The newest rollout of the account in the environment, with the answers per arm of every replica.",
                responses: [(200, rolloutAnswer)], problems: [404])
        ) { routes, _, match throws(Problem) in try routes.readRolloutRoute(match) },
        Route(
            .patch, "/v1/accounts/{account}/layout/rollout", .scoped(.deploy, .account), label: "layout_rollout",
            inputs: [account, environment] + writeOptions, touchesStore: true,
            APIOperation(
                "Raise the percent (never lower it; a raise is gated and may be held for review) or pause and resume.",
                body: .object(["percent": .number(minimum: 0, maximum: 100), "paused": .boolean, "guard": APISchema.anyObject.orNull]),
                responses: [
                    (200, rolloutAnswer), (202, heldForReview),
                ], problems: [403, 404, 409, 422])
        ) { routes, request, match throws(Problem) in try routes.changeRolloutRoute(request, match, action: "rollout.patch")
        },
        Route(
            .post, "/v1/accounts/{account}/layout/rollout/complete", .scoped(.deploy, .account), label: "layout_rollout_complete",
            inputs: [account, environment] + writeOptions, touchesStore: true,
            APIOperation(
                "The candidate becomes the stable version for everyone (gated; may be held for review).",
                responses: [
                    (200, rolloutAnswer), (202, heldForReview),
                ], problems: [403, 404, 409, 422])
        ) { routes, request, match throws(Problem) in try routes.changeRolloutRoute(request, match, action: "rollout.complete")
        },
        Route(
            .post, "/v1/accounts/{account}/layout/rollout/rollback", .scoped(.rollback, .account), label: "layout_rollout_rollback",
            inputs: [account, environment], touchesStore: true,
            APIOperation(
                "Everyone gets the stable version at once; the reason is recorded.",
                body: .object(["reason": .string(maxLength: 1024)]), bodyRequired: false,
                responses: [(200, rolloutAnswer)], problems: [404, 409, 422])
        ) { routes, request, match throws(Problem) in try routes.changeRolloutRoute(request, match, action: "rollout.rollback")
        },
        Route(
            .post, "/v1/alerts", .scoped(.rollback, .service), label: "alerts", touchesStore: true,
            APIOperation(
                "Prometheus Alertmanager's webhook (version 4): firing alerts with an account label roll back its rollouts.",
                body: .object(["version": .string(), "alerts": .array()], required: ["version", "alerts"]),
                responses: [
                    (
                        200,
                        APIOperation.json(
                            "The rollouts rolled back, and those the token may not roll back (refused).",
                            .object(required: ["rolledBack", "refused"]))
                    )
                ], problems: [403, 413, 422])
        ) { routes, request, match throws(Problem) in try routes.alertsRoute(request, match) },
    ]

    static let routes = rolloutRoutes + revocationRoutes
}
