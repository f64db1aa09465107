import Foundation
import MicroHTTPD
import TabStore
import TabWebhooks

/// Webhooks (docs/webhooks.md): endpoints with `whsec_` secrets made, listed, read, deleted and given a new secret;
/// their deliveries listed and sent again (admin only). The outbox is sent by ``WebhookWorker``.
struct WebhookRoutes: RouteCollection {
    let store: any WebhookStore
    /// Where a webhook may deliver, checked when one is made (and by the worker before every attempt).
    let policy: AddressPolicy
    let resolver: any HostResolver
    /// Poked when a delivery is due now (a redelivery).
    let outbox: WebhookWorker
    let audit: AuditLog
    let failures: StoreFailures
    let now: @Sendable () -> Date

    static let webhookAnswer = APIOperation.json(
        "The webhook (its secret only when just made or rotated).",
        .object(required: ["id", "url", "events", "accounts", "active", "createdAt"]))

    /// The `{id}` of a webhook's paths: any text (one that names no webhook is 404 once the store was asked).
    static let webhookID = RouteInput.path("id", String.self)

    static let routes: [Route<WebhookRoutes>] = [
        Route(
            .post, "/v1/webhooks", .scoped(.admin, .service), label: "webhooks", touchesStore: true,
            APIOperation(
                "Make a webhook; its whsec_ secret is in this answer only.",
                body: .object(
                    [
                        "url": .string(format: "uri"),
                        "events": .array(.string(values: ["layout", "strings", "rollout", "promote", "change-request"])),
                        "accounts": .array(.string()),
                    ], required: ["url", "events"]),
                responses: [(201, webhookAnswer)], problems: [400, 415, 422])
        ) { routes, request, match throws(Problem) in try routes.createWebhook(request, match) },
        Route(
            .get, "/v1/webhooks", .scoped(.admin, .service), label: "webhooks", touchesStore: true,
            APIOperation(
                "Every webhook (never their secrets).",
                responses: [(200, APIOperation.json("The webhooks.", .object(["webhooks": .array(.anyObject)], required: ["webhooks"])))])
        ) { routes, request, match throws(Problem) in try routes.listWebhooks(request, match) },
        Route(
            .get, "/v1/webhooks/{id}", .scoped(.admin, .service), label: "webhook", inputs: [webhookID], touchesStore: true,
            APIOperation("One webhook.", responses: [(200, webhookAnswer)], problems: [404])
        ) { routes, request, match throws(Problem) in try routes.readWebhook(request, match) },
        Route(
            .delete, "/v1/webhooks/{id}", .scoped(.admin, .service), label: "webhook", inputs: [webhookID], touchesStore: true,
            APIOperation(
                "Delete a webhook and its deliveries.", responses: [(204, APIOperation.answer("Deleted."))], problems: [404])
        ) { routes, request, match throws(Problem) in try routes.deleteWebhook(request, match) },
        Route(
            .post, "/v1/webhooks/{id}/rotate-secret", .scoped(.admin, .service), label: "webhook_rotate", inputs: [webhookID],
            touchesStore: true,
            APIOperation(
                "A new secret (in this answer only); the replaced one keeps signing for 24 hours.",
                responses: [(200, webhookAnswer)], problems: [404])
        ) { routes, request, match throws(Problem) in try routes.rotateWebhookSecret(request, match) },
        Route(
            .get, "/v1/webhooks/{id}/deliveries", .scoped(.admin, .service), label: "webhook_deliveries",
            inputs: [webhookID, .query("after", DeliveryCursor.self), .query("limit", DeliveryPageSize.self)], touchesStore: true,
            APIOperation(
                "The webhook's deliveries, oldest first; next is the after of the next page.",
                responses: [
                    (200, APIOperation.json("A page of deliveries.", .object(required: ["deliveries", "next"])))
                ], problems: [400, 404])
        ) { routes, request, match throws(Problem) in try routes.listDeliveries(request, match) },
        Route(
            .post, "/v1/webhooks/{id}/deliveries/{delivery}/redeliver", .scoped(.admin, .service), label: "webhook_redeliver",
            inputs: [webhookID, .path("delivery", String.self)], touchesStore: true,
            APIOperation(
                "Send a delivery again now.",
                responses: [
                    (202, APIOperation.json("Pending again; the worker sends it.", .anyObject))
                ], problems: [404])
        ) { routes, request, match throws(Problem) in try routes.redeliver(request, match) },
    ]
}

/// `?after=` of a webhook's deliveries: the `next` of a previous page (an event id, digits only).
struct DeliveryCursor: RouteInputValue {
    let eventID: Int64

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let value = Int64(text), value >= 0, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .problem(.badRequest("after is the next value of a previous page, not '\(text.prefix(64))'"))
        }
        eventID = value
    }

    static var schema: APISchema { .string() }
}

/// `?limit=` of a webhook's deliveries: a whole number from 1 to 1000 (default 100).
struct DeliveryPageSize: RouteInputValue {
    let value: Int

    init(input text: String, named name: String) throws(InputRefusal) {
        guard let value = Int(text), (1...1000).contains(value), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .problem(.badRequest("limit is a whole number from 1 to 1000, not '\(text.prefix(64))'"))
        }
        self.value = value
    }

    static var schema: APISchema { .integer(minimum: 1, maximum: 1000) }
}
