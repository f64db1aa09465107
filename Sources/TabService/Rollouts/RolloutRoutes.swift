import MicroHTTPD
import TabDelivery

/// Environments and rollouts (docs/rollouts.md): a layout's rollout and Alertmanager's alerts, behind the `deploy` scope.
struct RolloutRoutes: RouteCollection, ManagementOperations {
    /// The promotion and rollout commands, the builds gate and review.
    let changes: Changes
    /// Where refused rollbacks and promotions beyond the token's environments are recorded.
    let audit: AuditLog

    static let rolloutAnswer = """
        description: The rollout.
        content:
          application/json:
            schema:
              type: object
              required: [id, environment, version, stableVersion, percent, steps, step, nextStepAt, state, seed, startedAt, served, history]
              properties:
                state: {type: string, enum: [scheduled, running, paused, completed, rolledBack]}
                served: {type: object, required: [candidate, stable]}
                guard: {type: [object, 'null']}
                health: {type: object}
                history:
                  type: array
                  items:
                    type: object
                    required: [at, author, change, state, percent, message]
                    properties:
                      change: {type: string, enum: [scheduled, started, stepped, raised, paused, resumed, completed, rolledBack]}
                      state: {type: string, enum: [scheduled, running, paused, completed, rolledBack]}
        """

    static let rolloutRoutes: [Route<RolloutRoutes>] = [
        Route(
            .post, "/v1/accounts/{account}/layout/promote", .scoped(.deploy, .account), label: "layout_promote",
            inputs: [account] + preconditions + writeOptions, touchesStore: true, environmentsInBody: true,
            APIOperation(
                "Point an environment at the version another points at (to defaults to the next after from); with rollout, gradually.",
                requestBody: """
                    required: true
                    content:
                      application/json:
                        schema:
                          type: object
                          required: [from]
                          properties:
                            from: {type: string}
                            to: {type: string}
                            rollout: {type: object}
                    """,
                responses: [
                    (200, written), (201, written), (202, heldForReview), (403, APIOperation.problem), (404, APIOperation.problem),
                    (409, APIOperation.problem), (412, APIOperation.problem), (413, APIOperation.problem), (422, APIOperation.problem),
                    (428, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.promoteRoute(request, match) },
        Route(
            .post, "/v1/strings/{locale}/promote", .scoped(.deploy, .allAccounts), label: "strings_promote",
            inputs: [locale] + preconditions + writeOptions, touchesStore: true, environmentsInBody: true,
            APIOperation(
                "Point an environment at the version of a strings table another points at (to defaults to the next after from).",
                requestBody: """
                    required: true
                    content:
                      application/json: {schema: {type: object, required: [from], properties: {from: {type: string}, to: {type: string}}}}
                    """,
                responses: [
                    (
                        200,
                        """
                        description: The table the environment points at now.
                        content:
                          application/json: {schema: {type: object, required: [locale, version, etag]}}
                        """
                    ),
                    (202, heldForReview), (403, APIOperation.problem), (404, APIOperation.problem), (412, APIOperation.problem),
                    (413, APIOperation.problem), (422, APIOperation.problem), (428, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.promoteStringsRoute(request, match) },
        Route(
            .post, "/v1/accounts/{account}/layout/rollout", .scoped(.deploy, .account), label: "layout_rollout",
            inputs: [account, environment] + preconditions + writeOptions, touchesStore: true,
            APIOperation(
                "Start a rollout of a version to a growing share of installs (steps with holds, or a fixed percent).",
                requestBody: """
                    required: true
                    content:
                      application/json:
                        schema:
                          type: object
                          required: [version]
                          properties:
                            version: {type: integer, minimum: 1}
                            percent: {type: number, minimum: 0, maximum: 100}
                            steps: {type: array, items: {type: object, required: [percent, hold], properties: {percent: {type: number}, hold: {type: string}}}}
                            startAt: {type: string, format: date-time}
                            seed: {type: string}
                            installs: {type: array, items: {type: string}}
                            guard: {type: object, required: [kind], properties: {kind: {type: string, enum: [tabFailed, reverted, refused, failures]}, action: {type: string, enum: [pause, rollback]}}}
                    """,
                responses: [
                    (201, rolloutAnswer), (202, heldForReview), (403, APIOperation.problem), (404, APIOperation.problem),
                    (409, APIOperation.problem), (412, APIOperation.problem), (413, APIOperation.problem), (422, APIOperation.problem),
                    (428, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.startRolloutRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/rollout", .scoped(.read, .account), label: "layout_rollout",
            inputs: [account, environment], touchesStore: true,
            APIOperation(
                "The newest rollout of the account in the environment, with the answers per arm of every replica.",
                responses: [(200, rolloutAnswer), (404, APIOperation.problem)])
        ) { routes, _, match throws(Problem) in try routes.readRolloutRoute(match) },
        Route(
            .patch, "/v1/accounts/{account}/layout/rollout", .scoped(.deploy, .account), label: "layout_rollout",
            inputs: [account, environment] + writeOptions, touchesStore: true,
            APIOperation(
                "Raise the percent (never lower it; a raise is gated and may be held for review) or pause and resume.",
                requestBody: """
                    required: true
                    content:
                      application/json:
                        schema: {type: object, properties: {percent: {type: number, minimum: 0, maximum: 100}, paused: {type: boolean}, guard: {type: [object, 'null']}}}
                    """,
                responses: [
                    (200, rolloutAnswer), (202, heldForReview), (403, APIOperation.problem), (404, APIOperation.problem),
                    (409, APIOperation.problem), (422, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.changeRolloutRoute(request, match, action: "rollout.patch")
        },
        Route(
            .post, "/v1/accounts/{account}/layout/rollout/complete", .scoped(.deploy, .account), label: "layout_rollout_complete",
            inputs: [account, environment] + writeOptions, touchesStore: true,
            APIOperation(
                "The candidate becomes the stable version for everyone (gated; may be held for review).",
                responses: [
                    (200, rolloutAnswer), (202, heldForReview), (403, APIOperation.problem), (404, APIOperation.problem),
                    (409, APIOperation.problem), (422, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.changeRolloutRoute(request, match, action: "rollout.complete")
        },
        Route(
            .post, "/v1/accounts/{account}/layout/rollout/rollback", .scoped(.rollback, .account), label: "layout_rollout_rollback",
            inputs: [account, environment], touchesStore: true,
            APIOperation(
                "Everyone gets the stable version at once; the reason is recorded.",
                requestBody: """
                    required: false
                    content:
                      application/json: {schema: {type: object, properties: {reason: {type: string, maxLength: 1024}}}}
                    """,
                responses: [(200, rolloutAnswer), (404, APIOperation.problem), (409, APIOperation.problem), (422, APIOperation.problem)])
        ) { routes, request, match throws(Problem) in try routes.changeRolloutRoute(request, match, action: "rollout.rollback")
        },
        Route(
            .post, "/v1/alerts", .scoped(.rollback, .service), label: "alerts", touchesStore: true,
            APIOperation(
                "Prometheus Alertmanager's webhook (version 4): firing alerts with an account label roll back its rollouts.",
                requestBody: """
                    required: true
                    content:
                      application/json: {schema: {type: object, required: [version, alerts], properties: {version: {type: string}, alerts: {type: array}}}}
                    """,
                responses: [
                    (
                        200,
                        """
                        description: The rollouts rolled back, and those the token may not roll back (refused).
                        content:
                          application/json: {schema: {type: object, required: [rolledBack, refused]}}
                        """
                    ),
                    (403, APIOperation.problem), (413, APIOperation.problem), (422, APIOperation.problem),
                ])
        ) { routes, request, match throws(Problem) in try routes.alertsRoute(request, match) },
    ]

    static let routes = rolloutRoutes + revocationRoutes
}
