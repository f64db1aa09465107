import Foundation
import MicroHTTPD
import Synchronization
import TabAccess
import TabDelivery
import TabLayout
import TabStore
import TabWebhooks

/// The handlers of "Webhooks" (docs/webhooks.md): endpoints made, listed, read, deleted and given a new secret; their
/// deliveries listed and sent again. The worker that sends them is ``WebhookWorker``.
extension TabService {
    /// `POST /v1/webhooks`: the body checked, the URL's addresses checked by the policy (422 at `/url`), a new
    /// secret, shown in this answer only.
    func createWebhookRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let spec: WebhookSpec
        do throws(InvalidFields) {
            spec = try WebhookSpec(json: request.body)
        } catch {
            return .response(Self.invalidWebhook(error.errors))
        }
        if let grant = match.grant, !grant.encloses(webhookAccounts: spec.subscription.accounts) {
            return refuseBeyondGrant("the webhook", grant: grant, request)
        }
        let author = match.author
        return .deferred {
            do throws(WebhookAddressError) {
                _ = try await self.configuration.webhookPolicy.destination(for: spec.url, resolver: self.configuration.webhookResolver)
            } catch {
                return Self.invalidWebhook([FieldError(pointer: "/url", message: error.description)])
            }
            let secret = WebhookSecret.generate()
            let webhook = StoredWebhook(
                id: StoredWebhook.newID(), url: spec.url.description,
                events: WebhookEvent.Kind.allCases.map(\.rawValue).filter {
                    spec.subscription.events.contains(WebhookEvent.Kind(rawValue: $0)!)  // allCases' own names
                }, accounts: spec.subscription.accounts.map(\.description), secret: secret.text, createdAtMillis: currentTimeMillis(),
                createdBy: author)
            do throws(StoreError) {
                try await self.store.createWebhook(
                    webhook, audit: AuditContext.current?.entry(action: "webhook.create", account: nil, status: 201))
            } catch {
                return self.storeProblem(error)
            }
            var response = json(201, Self.webhookJSON(webhook).merging(["secret": .string(secret.text)]) { $1 })
            response.headers.append(HTTPHeader("Location", "/v1/webhooks/\(webhook.id)"))
            return response
        }
    }

    /// `GET /v1/webhooks`.
    func listWebhooksRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let grant = match.grant
        return .deferred {
            do throws(StoreError) {
                let all = try await self.store.webhooks().filter { Self.webhook($0, isWithin: grant) }
                return json(200, ["webhooks": .array(all.map { .object(Self.webhookJSON($0)) })])
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// `GET /v1/webhooks/{id}`.
    func readWebhookRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let id = match["id"]
        let grant = match.grant
        return .deferred {
            do throws(StoreError) {
                guard let webhook = try await self.store.webhook(id: id), Self.webhook(webhook, isWithin: grant) else {
                    return Self.noWebhook(id)
                }
                return json(200, Self.webhookJSON(webhook))
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// `DELETE /v1/webhooks/{id}`: the endpoint and its deliveries (pending ones are not sent).
    func deleteWebhookRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let id = match["id"]
        let grant = match.grant
        return .deferred {
            do throws(StoreError) {
                guard try await self.webhookExists(id, within: grant) else { return Self.noWebhook(id) }
                try await self.store.deleteWebhook(
                    id: id, audit: AuditContext.current?.entry(action: "webhook.delete", account: nil, status: 204))
                return HTTPResponse(status: 204, headers: [], body: [])
            } catch .notFound {
                return Self.noWebhook(id)
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// `POST /v1/webhooks/{id}/rotate-secret`: a new secret (shown once); the replaced one signs for 24 h more.
    func rotateWebhookSecretRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let id = match["id"]
        let grant = match.grant
        return .deferred {
            let now = Date()
            let fresh = Mutex<String?>(nil)
            do throws(StoreError) {
                guard try await self.webhookExists(id, within: grant) else { return Self.noWebhook(id) }
                let audit = AuditContext.current?.entry(action: "webhook.rotate-secret", account: nil, status: 200)
                let webhook = try await self.store.editWebhook(id: id, audit: audit) { webhook in
                    guard var keyring = webhook.keyring() else { return }
                    let secret = keyring.rotate(at: now)
                    webhook.secret = secret.text
                    webhook.previousSecret = keyring.previous?.secret.text
                    webhook.previousUntilMillis = keyring.previous?.until.millis
                    fresh.withLock { $0 = secret.text }
                }
                guard let secret = fresh.withLock({ $0 }) else { throw .unavailable("webhook \(id): its stored secret does not read") }
                return json(200, Self.webhookJSON(webhook).merging(["secret": .string(secret)]) { $1 })
            } catch .notFound {
                return Self.noWebhook(id)
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// `GET /v1/webhooks/{id}/deliveries?after=&limit=`: oldest first; `next` is the `after` of the next page.
    func listDeliveriesRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let id = match["id"]
        var after: Int64 = 0
        if let text = request.query("after") {
            guard let value = Int64(text), value >= 0, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return .response(Problem.badRequest("after is the next value of a previous page, not '\(text.prefix(64))'").response)
            }
            after = value
        }
        var limit = 100
        if let text = request.query("limit") {
            guard let value = Int(text), (1...1000).contains(value), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return .response(Problem.badRequest("limit is a whole number from 1 to 1000, not '\(text.prefix(64))'").response)
            }
            limit = value
        }
        let grant = match.grant
        return .deferred { [after, limit] in
            do throws(StoreError) {
                guard try await self.webhookExists(id, within: grant) else { return Self.noWebhook(id) }
                let fetched = try await self.store.deliveries(webhookID: id, afterEvent: after, limit: limit + 1)
                let page = Array(fetched.prefix(limit))
                let next = fetched.count > limit ? page.last.map { "\"\($0.delivery.eventID)\"" } ?? "null" : "null"
                let encoded = try? JSONEncoder.webhooks.encode(page.map(\.delivery))
                let body = Array("{\"deliveries\":".utf8) + Array(encoded ?? Data("[]".utf8)) + Array(",\"next\":\(next)}".utf8)
                return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], body: body)
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// `POST /v1/webhooks/{id}/deliveries/{d}/redeliver`: pending again, due now (202: the worker sends it).
    func redeliverRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let id = match["id"]
        let deliveryID = match["delivery"]
        let grant = match.grant
        return .deferred {
            do throws(StoreError) {
                guard try await self.webhookExists(id, within: grant) else { return Self.noWebhook(id) }
                let audit = AuditContext.current?.entry(action: "webhook.redeliver", account: nil, status: 202)
                let stored = try await self.store.redeliver(
                    webhookID: id, deliveryID: deliveryID, atMillis: currentTimeMillis(), audit: audit)
                self.webhookWorker.poke()
                let encoded = (try? JSONEncoder.webhooks.encode(stored.delivery)) ?? Data("{}".utf8)
                return HTTPResponse(status: 202, headers: [HTTPHeader("Content-Type", "application/json")], body: Array(encoded))
            } catch .notFound {
                return Problem.notFound("webhook \(id) has no delivery \(deliveryID)").response
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// A webhook as listed: never its secrets.
    static func webhookJSON(_ webhook: StoredWebhook) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "id": .string(webhook.id), "url": .string(webhook.url), "events": .array(webhook.events.map { .string($0) }),
            "accounts": .array(webhook.accounts.map { .string($0) }), "active": .bool(webhook.active),
            "createdAt": .string(Timestamp(unixMillis: webhook.createdAtMillis).rfc3339),
        ]
        if let reason = webhook.disabledReason { object["disabledReason"] = .string(reason) }
        if let until = webhook.previousUntilMillis, until > currentTimeMillis() {
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

    /// Whether the webhook `id` exists and is within `grant`.
    private func webhookExists(_ id: String, within grant: Grant?) async throws(StoreError) -> Bool {
        guard let webhook = try await store.webhook(id: id) else { return false }
        return Self.webhook(webhook, isWithin: grant)
    }

    static func noWebhook(_ id: String) -> HTTPResponse { Problem.notFound("no webhook \(id)").response }

    static func invalidWebhook(_ errors: [FieldError]) -> HTTPResponse {
        invalidFields(InvalidFields(errors: errors), what: "webhook")
    }
}

extension JSONEncoder {
    /// Deliveries as `GET …/deliveries` lists them (members sorted, `/` not escaped).
    static var webhooks: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
