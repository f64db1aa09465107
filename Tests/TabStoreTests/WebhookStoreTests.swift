import Foundation
import TabStorePostgres
import TabTime
import TabWebhooks
import Testing

@testable import TabStore

func hook(_ id: String, events: [String] = ["layout"], accounts: [String] = ["*"]) -> StoredWebhook {
    StoredWebhook(
        id: id, url: "https://hooks.example.com/\(id)", events: events, accounts: accounts, secret: WebhookSecret.generate().text,
        createdAtMillis: TimeSource.system.unixMillis, createdBy: "tester")
}

/// The webhook tables and the outbox, on every backend this machine has.
@Suite struct WebhookStoreTests {
    @Test(arguments: Backend.available)
    func aLayoutWriteLeavesOnePendingDeliveryPerWebhookThatWantsIt(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createWebhook(hook("wh_all"))
        try await store.createWebhook(hook("wh_strings", events: ["strings"]))
        try await store.createWebhook(hook("wh_other", accounts: ["other-*"]))
        let record = try await store.append(write("shop", #"{"tabs":[]}"#, .ifNoneMatchAny))
        let all = try await store.deliveries(webhookID: "wh_all", afterEvent: 0, limit: 10)
        #expect(all.count == 1)
        #expect(try await store.deliveries(webhookID: "wh_strings", afterEvent: 0, limit: 10).isEmpty)
        #expect(try await store.deliveries(webhookID: "wh_other", afterEvent: 0, limit: 10).isEmpty)
        let delivery = try #require(all.first)
        #expect(delivery.delivery.state == .pending && delivery.delivery.attempts == 0 && delivery.delivery.type == "layout.published")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(delivery.payload)) as? [String: Any])
        let data = try #require(body["data"] as? [String: Any])
        #expect(body["type"] as? String == "layout.published")
        #expect(data["account"] as? String == "shop" && data["etag"] as? String == record.etag && data["version"] as? Int == 1)
    }

    @Test(arguments: Backend.available)
    func aRefusedWriteLeavesNoDelivery(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createWebhook(hook("wh_all", events: ["layout", "strings"]))
        _ = try await store.append(write("shop", "{}", .ifNoneMatchAny))
        await #expect(throws: StoreError.self) { try await store.append(write("shop", "{ }", .ifMatch(["\"nope\""]))) }
        await #expect(throws: StoreError.self) {
            try await store.appendStrings(
                locale: "en", source: [], contentType: "text/plain", precondition: .ifMatch(["\"x\""]), author: nil)
        }
        #expect(try await store.deliveries(webhookID: "wh_all", afterEvent: 0, limit: 10).count == 1)
    }

    @Test(arguments: Backend.available)
    func eventsAreNumberedInCommitOrderAndPagedByThatNumber(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createWebhook(hook("wh_a", events: ["layout", "strings"]))
        let first = try await store.append(write("a", "{}", .ifNoneMatchAny))
        _ = try await store.appendStrings(
            locale: "en", source: Array("\"k\" = \"v\";".utf8), contentType: "text/plain", precondition: .none, author: "t")
        _ = try await store.delete(account: "a", precondition: .ifMatch([first.etag]), author: "t")
        let page = try await store.deliveries(webhookID: "wh_a", afterEvent: 0, limit: 2)
        #expect(page.map(\.delivery.type) == ["layout.published", "strings.published"])
        let rest = try await store.deliveries(webhookID: "wh_a", afterEvent: try #require(page.last).delivery.eventID, limit: 2)
        #expect(rest.count == 1)
        #expect(String(decoding: try #require(rest.first).payload, as: UTF8.self).contains(#""deleted":true"#))
    }

    @Test(arguments: Backend.available)
    func aClaimLeasesItsDeliveriesUntilTheAttemptIsRecorded(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createWebhook(hook("wh_a"))
        _ = try await store.append(write("a", "{}", .ifNoneMatchAny))
        let now = TimeSource.system.unixMillis + 1000
        let claimed = try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 10)
        #expect(claimed.count == 1 && claimed.first?.webhook.id == "wh_a")
        #expect(try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 10).isEmpty)
        #expect(try await store.claimDueDeliveries(atMillis: now + 30_001, leaseMillis: 30_000, limit: 10).count == 1)
        var attempt = try #require(claimed.first).delivery
        #expect(attempt.delivery.record(.status(500), at: Date(millis: now)) == .retry(afterSeconds: 5))
        try await store.recordAttempt(attempt, disableReason: nil)
        let stored = try #require(try await store.deliveries(webhookID: "wh_a", afterEvent: 0, limit: 1).first)
        #expect(stored.delivery.attempts == 1 && stored.delivery.lastStatus == 500 && stored.delivery.state == .pending)
        #expect(stored.delivery.nextAttemptAt == Date(millis: now + 5000))
        #expect(try await store.claimDueDeliveries(atMillis: now + 4999, leaseMillis: 30_000, limit: 10).isEmpty)
        #expect(try await store.claimDueDeliveries(atMillis: now + 5000, leaseMillis: 30_000, limit: 10).count == 1)
    }

    @Test(arguments: Backend.available)
    func goneDisablesTheWebhookAndItsPendingDeliveriesWait(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createWebhook(hook("wh_a"))
        _ = try await store.append(write("a", "{}", .ifNoneMatchAny))
        _ = try await store.append(write("b", "{}", .ifNoneMatchAny))
        let now = TimeSource.system.unixMillis + 1000
        var first = try #require(try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 1).first).delivery
        #expect(first.delivery.record(.status(410), at: Date(millis: now)) == .disableWebhook)
        try await store.recordAttempt(first, disableReason: "the receiver answered 410 Gone")
        let webhook = try #require(try await store.webhook(id: "wh_a"))
        #expect(!webhook.active && webhook.disabledReason == "the receiver answered 410 Gone")
        #expect(try await store.claimDueDeliveries(atMillis: now + 60_000, leaseMillis: 30_000, limit: 10).isEmpty)
        _ = try await store.append(write("c", "{}", .ifNoneMatchAny))
        #expect(try await store.deliveries(webhookID: "wh_a", afterEvent: 0, limit: 10).count == 2)
    }

    @Test(arguments: Backend.available)
    func editRedeliverAndDeleteWork(backend: Backend) async throws {
        let store = try backend.open()
        let made = hook("wh_a")
        try await store.createWebhook(made)
        await #expect(throws: StoreError.conflict) { try await store.createWebhook(made) }
        let rotated = try await store.editWebhook(id: "wh_a") { webhook in
            webhook.previousSecret = webhook.secret
            webhook.previousUntilMillis = 42
            webhook.secret = "whsec_new"
        }
        #expect(rotated.previousSecret == made.secret && rotated.createdAtMillis == made.createdAtMillis)
        #expect(try await store.webhook(id: "wh_a") == rotated)
        _ = try await store.append(write("a", "{}", .ifNoneMatchAny))
        let now = TimeSource.system.unixMillis + 1000
        var attempt = try #require(try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 1).first).delivery
        _ = attempt.delivery.record(.status(204), at: Date(millis: now))
        try await store.recordAttempt(attempt, disableReason: nil)
        let again = try await store.redeliver(webhookID: "wh_a", deliveryID: attempt.delivery.id, atMillis: now + 1)
        #expect(again.delivery.state == .pending && again.delivery.attempts == 1)
        await #expect(throws: StoreError.notFound) {
            try await store.redeliver(webhookID: "wh_b", deliveryID: attempt.delivery.id, atMillis: now)
        }
        try await store.deleteWebhook(id: "wh_a")
        #expect(try await store.webhooks().isEmpty)
        #expect(try await store.deliveries(webhookID: "wh_a", afterEvent: 0, limit: 10).isEmpty)
        await #expect(throws: StoreError.notFound) { try await store.deleteWebhook(id: "wh_a") }
    }

    @Test(.enabled(if: PostgresTestDatabase.serverURL != nil))
    func replicasClaimingTogetherNeverTakeTheSameDelivery() async throws {
        let url = try PostgresTestDatabase.create()
        let first = try PostgresStore(url: url)
        let second = try PostgresStore(url: url)
        try await first.createWebhook(hook("wh_a"))
        for n in 0..<40 { _ = try await first.append(write("acct\(n)", "{}", .ifNoneMatchAny)) }
        let now = TimeSource.system.unixMillis + 1000
        async let a = Self.claimAll(first, at: now)
        async let b = Self.claimAll(second, at: now)
        let (fromFirst, fromSecond) = try await (a, b)
        #expect(fromFirst.count + fromSecond.count == 40)
        #expect(Set(fromFirst).isDisjoint(with: Set(fromSecond)))
    }

    /// One dead receiver's backlog never fills a claim: at most `perWebhook` of a webhook, counting those in flight.
    @Test(arguments: Backend.available)
    func aClaimTakesAtMostTwoOfOneWebhookCountingThoseInFlight(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createWebhook(hook("wh_dead"))
        for index in 0..<6 { _ = try await store.append(write("a\(index)", "{}", .ifNoneMatchAny)) }
        try await store.createWebhook(hook("wh_live"))
        _ = try await store.append(write("z", "{}", .ifNoneMatchAny))
        let now = TimeSource.system.unixMillis + 1000
        let first = try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 8, perWebhook: 2, busy: [:])
        #expect(first.filter { $0.webhook.id == "wh_dead" }.count == 2 && first.filter { $0.webhook.id == "wh_live" }.count == 1)
        let busy = try await store.claimDueDeliveries(
            atMillis: now, leaseMillis: 30_000, limit: 8, perWebhook: 2, busy: ["wh_dead": 2])
        #expect(busy.isEmpty, "both of wh_dead's slots are taken: \(busy.map(\.webhook.id))")
        let one = try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 8, perWebhook: 2, busy: ["wh_dead": 1])
        #expect(one.map(\.webhook.id) == ["wh_dead"])
    }

    @Test(arguments: Backend.available)
    func finishedDeliveriesPastTheRetentionArePrunedButNeverTheNewest(backend: Backend) async throws {
        let store = try backend.open()
        try await store.createWebhook(hook("wh_a"))
        for index in 0..<3 { _ = try await store.append(write("a\(index)", "{}", .ifNoneMatchAny)) }
        let now = TimeSource.system.unixMillis + 1000
        for var claimed in try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 10).map(\.delivery) {
            _ = claimed.delivery.record(.status(204), at: Date(millis: now))
            try await store.recordAttempt(claimed, disableReason: nil)
        }
        _ = try await store.append(write("pending", "{}", .ifNoneMatchAny))
        #expect(try await store.pruneFinishedDeliveries(beforeMillis: now - 60_000, limit: 10) == 0, "none is old enough")
        #expect(try await store.pruneFinishedDeliveries(beforeMillis: now + 60_000, limit: 10) == 3)
        let left = try await store.deliveries(webhookID: "wh_a", afterEvent: 0, limit: 10)
        #expect(left.map(\.delivery.state) == [.pending], "the pending one stays")
    }

    static func claimAll(_ store: PostgresStore, at now: Int64) async throws -> [String] {
        var ids: [String] = []
        while true {
            let batch = try await store.claimDueDeliveries(atMillis: now, leaseMillis: 30_000, limit: 3)
            if batch.isEmpty { return ids }
            ids += batch.map(\.delivery.delivery.id)
        }
    }
}
