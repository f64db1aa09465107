import Foundation
import MicroHTTPD
import Synchronization
import TabAccess
import TabLayout
import TabStore
import TabTime
import TabWebhooks

/// The handlers of "Webhooks" (docs/webhooks.md).
extension WebhookRoutes {
    /// `POST /v1/webhooks`: the body checked, the URL's addresses checked by the policy (422 at `/url`), a new
    /// secret, shown in this answer only.
    func createWebhook(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let spec: WebhookSpec
        do throws(InvalidFields) {
            spec = try WebhookSpec(json: request.body)
        } catch {
            throw Self.invalidWebhook(error.errors)
        }
        if let grant = match.grant, !grant.encloses(webhookAccounts: spec.subscription.accounts) {
            throw audit.refuseBeyondGrant("the webhook", grant: grant, request)
        }
        let author = match.author
        return .later { [self] () async throws(Problem) -> HTTPResponse in
            do throws(WebhookAddressError) {
                _ = try await policy.destination(for: spec.url, resolver: resolver)
            } catch {
                throw Self.invalidWebhook([FieldError(pointer: "/url", message: error.description)])
            }
            let secret = WebhookSecret.generate()
            let webhook = StoredWebhook(
                id: StoredWebhook.newID(), url: spec.url.description,
                events: WebhookEvent.Kind.allCases.map(\.rawValue).filter {
                    spec.subscription.events.contains(WebhookEvent.Kind(rawValue: $0)!)  // allCases' own names
                }, accounts: spec.subscription.accounts.map(\.description), secret: secret.text, createdAtMillis: now().millis,
                createdBy: author)
            do throws(StoreError) {
                try await store.createWebhook(
                    webhook, audit: AuditContext.current?.entry(action: "webhook.create", account: nil, status: 201))
            } catch {
                throw failures.problem(error)
            }
            var response = json(201, object(webhook).merging(["secret": .string(secret.text)]) { $1 })
            response.headers.append(HTTPHeader("Location", "/v1/webhooks/\(webhook.id)"))
            return response
        }
    }

    /// `GET /v1/webhooks`.
    func listWebhooks(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let grant = match.grant
        return .later { [self] () async throws(Problem) -> HTTPResponse in
            do throws(StoreError) {
                let all = try await store.webhooks().filter { Self.webhook($0, isWithin: grant) }
                return json(200, ["webhooks": .array(all.map { .object(object($0)) })])
            } catch {
                throw failures.problem(error)
            }
        }
    }

    /// `GET /v1/webhooks/{id}`.
    func readWebhook(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        onWebhook(match) { [self] webhook async throws(Problem) -> HTTPResponse in json(200, object(webhook)) }
    }

    /// `DELETE /v1/webhooks/{id}`: the endpoint and its deliveries (pending ones are not sent).
    func deleteWebhook(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        onWebhook(match) { [self] webhook async throws(Problem) -> HTTPResponse in
            do throws(StoreError) {
                let audit = AuditContext.current?.entry(action: "webhook.delete", account: nil, status: 204)
                try await store.deleteWebhook(id: webhook.id, audit: audit)
                return HTTPResponse(status: 204, headers: [], body: [])
            } catch .notFound {
                throw Self.noWebhook(webhook.id)
            } catch {
                throw failures.problem(error)
            }
        }
    }

    /// `POST /v1/webhooks/{id}/rotate-secret`: a new secret (shown once); the replaced one signs for 24 h more.
    func rotateWebhookSecret(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        onWebhook(match) { [self] webhook async throws(Problem) -> HTTPResponse in
            let now = self.now()
            let fresh = Mutex<String?>(nil)
            do throws(StoreError) {
                let audit = AuditContext.current?.entry(action: "webhook.rotate-secret", account: nil, status: 200)
                let rotated = try await store.editWebhook(id: webhook.id, audit: audit) { webhook in
                    guard var keyring = webhook.keyring() else { return }
                    let secret = keyring.rotate(at: now)
                    webhook.secret = secret.text
                    webhook.previousSecret = keyring.previous?.secret.text
                    webhook.previousUntilMillis = keyring.previous?.until.millis
                    fresh.withLock { $0 = secret.text }
                }
                guard let secret = fresh.withLock({ $0 }) else {
                    throw .unavailable("webhook \(webhook.id): its stored secret does not read")
                }
                return json(200, object(rotated).merging(["secret": .string(secret)]) { $1 })
            } catch .notFound {
                throw Self.noWebhook(webhook.id)
            } catch {
                throw failures.problem(error)
            }
        }
    }

    /// `GET /v1/webhooks/{id}/deliveries?after=&limit=`: oldest first; `next` is the `after` of the next page.
    func listDeliveries(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let after = match.inputs.query("after", as: DeliveryCursor.self)?.eventID ?? 0
        let limit = match.inputs.query("limit", as: DeliveryPageSize.self)?.value ?? 100
        return onWebhook(match) { [self, after, limit] webhook async throws(Problem) -> HTTPResponse in
            do throws(StoreError) {
                let fetched = try await store.deliveries(webhookID: webhook.id, afterEvent: after, limit: limit + 1)
                let page = Array(fetched.prefix(limit))
                let next = fetched.count > limit ? page.last.map { "\"\($0.delivery.eventID)\"" } ?? "null" : "null"
                let encoded = try? JSONEncoder.sorted.encode(page.map(\.delivery))
                let body = Array("{\"deliveries\":".utf8) + Array(encoded ?? Data("[]".utf8)) + Array(",\"next\":\(next)}".utf8)
                return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], body: body)
            } catch {
                throw failures.problem(error)
            }
        }
    }

    /// `POST /v1/webhooks/{id}/deliveries/{d}/redeliver`: pending again, due now (202: the worker sends it).
    func redeliver(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let deliveryID = match.inputs.path("delivery", as: String.self)
        return onWebhook(match) { [self] webhook async throws(Problem) -> HTTPResponse in
            do throws(StoreError) {
                let audit = AuditContext.current?.entry(action: "webhook.redeliver", account: nil, status: 202)
                let stored = try await store.redeliver(
                    webhookID: webhook.id, deliveryID: deliveryID, atMillis: now().millis, audit: audit)
                outbox.poke()
                let encoded = (try? JSONEncoder.sorted.encode(stored.delivery)) ?? Data("{}".utf8)
                return HTTPResponse(status: 202, headers: [HTTPHeader("Content-Type", "application/json")], body: Array(encoded))
            } catch .notFound {
                throw .notFound("webhook \(webhook.id) has no delivery \(deliveryID)")
            } catch {
                throw failures.problem(error)
            }
        }
    }

    /// A webhook as listed: never its secrets.
    func object(_ webhook: StoredWebhook) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "id": .string(webhook.id), "url": .string(webhook.url), "events": .array(webhook.events.map { .string($0) }),
            "accounts": .array(webhook.accounts.map { .string($0) }), "active": .bool(webhook.active),
            "createdAt": .string(Timestamp(unixMillis: webhook.createdAtMillis).rfc3339),
        ]
        if let reason = webhook.disabledReason { object["disabledReason"] = .string(reason) }
        if let until = webhook.previousUntilMillis, until > now().millis {
            object["previousSecretExpiresAt"] = .string(Timestamp(unixMillis: until).rfc3339)
        }
        return object
    }

    /// Whether `webhook` reaches nothing past `grant` (nil: a bootstrap token's everything). Webhooks beyond a
    /// token's grant are not listed and are 404 to it, as if they did not exist.
    static func webhook(_ webhook: StoredWebhook, isWithin grant: Grant?) -> Bool {
        guard let grant else { return true }
        let accounts = webhook.accounts.compactMap { try? AccountGlob($0) }
        return accounts.count == webhook.accounts.count && grant.encloses(webhookAccounts: accounts)
    }

    /// Work on the webhook `{id}` of the path, once it is known to exist within the caller's grant (else 404), run off
    /// libmicrohttpd's threads.
    private func onWebhook(
        _ match: RouteMatch, _ work: @escaping @Sendable (StoredWebhook) async throws(Problem) -> HTTPResponse
    ) -> HTTPReply {
        let id = match.inputs.path("id", as: String.self)
        let grant = match.grant
        return .later { [self] () async throws(Problem) -> HTTPResponse in try await work(try await existing(id, within: grant)) }
    }

    /// The webhook `id` when it exists and is within `grant`; else 404.
    private func existing(_ id: String, within grant: Grant?) async throws(Problem) -> StoredWebhook {
        let webhook: StoredWebhook?
        do throws(StoreError) {
            webhook = try await store.webhook(id: id)
        } catch {
            throw failures.problem(error)
        }
        guard let webhook, Self.webhook(webhook, isWithin: grant) else { throw Self.noWebhook(id) }
        return webhook
    }

    static func noWebhook(_ id: String) -> Problem { .notFound("no webhook \(id)") }

    static func invalidWebhook(_ errors: [FieldError]) -> Problem { .invalidFields(InvalidFields(errors: errors), what: "webhook") }
}
