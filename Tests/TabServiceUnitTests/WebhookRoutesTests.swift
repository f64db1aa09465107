import Foundation
import MicroHTTPD
import TabServiceTestSupport
import TabStore
import TabWebhooks
import Testing

@testable import TabService

private let admin = CollectionHarness.admin
private func object(_ response: TestResponse) -> [String: Any] { CollectionHarness.object(response) }

private func create(_ harness: CollectionHarness, _ body: [String: Any]) async -> TestResponse {
    await harness.respond(
        to: TestRequest(.post, "/v1/webhooks", headers: admin + [("Content-Type", "application/json")], body: jsonBody(body)))
}

/// The webhook endpoints through the webhook collection's own router, in process and without a service
/// (docs/webhooks.md; deliveries over real sockets: `WebhookTests`).
@Suite struct WebhookRoutesTests {
    @Test func webhooksToInternalAddressesAreRefusedWithThePointerToTheURL() async throws {
        let harness = CollectionHarness()
        for url in ["http://127.0.0.1:1/hook", "http://169.254.169.254/latest", "http://[::ffff:10.0.0.1]/", "http://localhost/x"] {
            let answer = await create(harness, ["url": url, "events": ["layout"]])
            #expect(answer.status == 422, "\(url)")
            let errors = object(answer)["errors"] as? [[String: Any]]
            #expect(errors?.first?["pointer"] as? String == "/url", "\(url)")
        }
        let unknown = await create(harness, ["url": "ftp://x.example/", "events": ["nope"]])
        #expect(unknown.status == 422)
        #expect(
            Set((object(unknown)["errors"] as? [[String: Any]] ?? []).compactMap { $0["pointer"] as? String }) == ["/url", "/events/0"])
        let list = await harness.respond(to: TestRequest(.get, "/v1/webhooks", headers: admin))
        #expect((object(list)["webhooks"] as? [Any])?.isEmpty == true)
    }

    @Test func theSecretIsShownWhenMadeAndRotatedOnly() async throws {
        let harness = CollectionHarness(webhookPolicy: .allowEverything)
        let made = await create(harness, ["url": "http://127.0.0.1:9/h", "events": ["layout", "strings"]])
        #expect(made.status == 201)
        let id = try #require(object(made)["id"] as? String)
        let secret = try #require(object(made)["secret"] as? String)
        #expect(WebhookSecret(secret) != nil && made.header("Location") == "/v1/webhooks/\(id)")
        let read = await harness.respond(to: TestRequest(.get, "/v1/webhooks/\(id)", headers: admin))
        #expect(read.status == 200 && object(read)["secret"] == nil && object(read)["active"] as? Bool == true)
        #expect(!read.text.contains(secret))
        let rotated = await harness.respond(to: TestRequest(.post, "/v1/webhooks/\(id)/rotate-secret", headers: admin))
        let newSecret = try #require(object(rotated)["secret"] as? String)
        #expect(rotated.status == 200 && newSecret != secret && object(rotated)["previousSecretExpiresAt"] is String)
        let stored = try #require(try await harness.store.webhook(id: id))
        #expect(stored.keyring()?.signingSecrets(at: Date()).map(\.text) == [newSecret, secret])
        #expect(await harness.respond(to: TestRequest(.delete, "/v1/webhooks/\(id)", headers: admin)).status == 204)
        #expect(await harness.respond(to: TestRequest(.get, "/v1/webhooks/\(id)", headers: admin)).status == 404)
        #expect(await harness.respond(to: TestRequest(.get, "/v1/webhooks")).status == 401)
    }

    /// A webhook beyond a narrowed admin's accounts is not listed and is 404 to it, as if it did not exist.
    @Test func aWebhookBeyondTheGrantIsNotThere() async throws {
        let harness = CollectionHarness(webhookPolicy: .allowEverything)
        let everyAccount = await create(harness, ["url": "http://127.0.0.1:9/all", "events": ["layout"]])
        let id = try #require(object(everyAccount)["id"] as? String)
        let narrowed = try await harness.makeToken(#"{"name": "ja-admin", "scopes": ["admin"], "accounts": ["ja*"]}"#)
        let mine = CollectionHarness.bearer(narrowed.secret)
        let list = await harness.respond(to: TestRequest(.get, "/v1/webhooks", headers: mine))
        #expect(list.status == 200 && (object(list)["webhooks"] as? [Any])?.isEmpty == true)
        for (method, path) in [
            (HTTPMethod.get, "/v1/webhooks/\(id)"), (.delete, "/v1/webhooks/\(id)"), (.get, "/v1/webhooks/\(id)/deliveries"),
        ] {
            let answer = await harness.respond(to: TestRequest(method, path, headers: mine))
            #expect(answer.status == 404 && object(answer)["detail"] as? String == "no webhook \(id)", "\(method.token) \(path)")
        }
        #expect(await harness.respond(to: TestRequest(.get, "/v1/webhooks/\(id)", headers: admin)).status == 200, "still there")
    }
}
