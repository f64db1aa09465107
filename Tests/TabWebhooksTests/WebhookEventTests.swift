import Foundation
import TabAccess
import TabWebhooks
import Testing

@Suite struct WebhookEventTests {
    static let at = Date(timeIntervalSince1970: 1_795_622_400)  // 2026-11-25T16:00:00Z
    static let layoutData = #"{"account":"jack","version":4,"etag":"\"0123abcd\"","author":"ios-ci","at":"2026-11-25T16:00:00Z"}"#

    func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func aLayoutEventCarriesTypeTimestampAndTheFeedsDataAsItIs() throws {
        let event = try WebhookEvent(kind: .layout, account: "jack", timestamp: Self.at, data: Array(Self.layoutData.utf8))
        #expect(event.type == "layout.published")
        let body = try object(event.body)
        #expect(body["type"] as? String == "layout.published")
        #expect(body["timestamp"] as? String == "2026-11-25T16:00:00Z")
        let data = try #require(body["data"] as? [String: Any])
        #expect(data["account"] as? String == "jack")
        #expect(data["version"] as? Int == 4)
        #expect(data["etag"] as? String == "\"0123abcd\"")
        #expect(String(decoding: event.body, as: UTF8.self).contains(Self.layoutData))
    }

    @Test func eachKindHasItsType() throws {
        let data = Array("{}".utf8)
        #expect(try WebhookEvent(kind: .strings, account: nil, timestamp: Self.at, data: data).type == "strings.published")
        #expect(try WebhookEvent(kind: .promote, account: "jack", timestamp: Self.at, data: data).type == "promote")
        #expect(
            try WebhookEvent(kind: .rollout, account: "jack", rolloutState: "rolledBack", timestamp: Self.at, data: data).type
                == "rollout.rolledBack")
        #expect(throws: WebhookEvent.Invalid.invalidRolloutState("")) {
            try WebhookEvent(kind: .rollout, account: "jack", timestamp: Self.at, data: data)
        }
        #expect(throws: WebhookEvent.Invalid.invalidRolloutState("a\"b")) {
            try WebhookEvent(kind: .rollout, account: "jack", rolloutState: "a\"b", timestamp: Self.at, data: data)
        }
        for bad in ["[]", "1", "", "{", #""x""#] {
            #expect(throws: WebhookEvent.Invalid.dataIsNotAJSONObject, "\(bad)") {
                try WebhookEvent(kind: .layout, account: "jack", timestamp: Self.at, data: Array(bad.utf8))
            }
        }
    }

    @Test func subscriptionsFilterByKindAndAccount() throws {
        let data = Array("{}".utf8)
        let jack = try WebhookEvent(kind: .layout, account: "jack", timestamp: Self.at, data: data)
        let shop = try WebhookEvent(kind: .layout, account: "shop-1", timestamp: Self.at, data: data)
        let strings = try WebhookEvent(kind: .strings, account: nil, timestamp: Self.at, data: data)
        let promote = try WebhookEvent(kind: .promote, account: "shop-1", timestamp: Self.at, data: data)
        let shops = WebhookSubscription(events: [.layout, .strings], accounts: [try AccountGlob("shop-*")])
        #expect([jack, shop, strings, promote].filter(shops.wants).map(\.account) == ["shop-1"])
        let everything = WebhookSubscription(events: Set(WebhookEvent.Kind.allCases))
        #expect([jack, shop, strings, promote].filter(everything.wants).count == 4)
    }

    @Test func aWebhookBodyIsCheckedFieldByField() throws {
        let spec = try WebhookSpec(
            json: Array(#"{"url": "https://hooks.example.com/t", "events": ["layout", "promote"], "accounts": ["jack"]}"#.utf8))
        #expect(spec.url.description == "https://hooks.example.com/t")
        #expect(spec.subscription.events == [.layout, .promote])
        #expect(spec.subscription.accounts.map(\.description) == ["jack"])
        #expect(
            try WebhookSpec(json: Array(#"{"url": "http://127.0.0.1:1/hook", "events": ["layout"]}"#.utf8)).subscription.accounts == [.all])

        func pointers(_ json: String) -> [String] {
            do throws(InvalidFields) {
                _ = try WebhookSpec(json: Array(json.utf8))
                return []
            } catch {
                return error.errors.map(\.pointer)
            }
        }
        #expect(pointers("[]") == [""])
        #expect(pointers(#"{"events": ["layout"]}"#) == ["/url"])
        #expect(pointers(#"{"url": "ftp://x.example/", "events": ["layout"]}"#) == ["/url"])
        #expect(pointers(#"{"url": "https://x.example/", "events": []}"#) == ["/events"])
        #expect(pointers(#"{"url": "https://x.example/", "events": ["layout", "deploy"]}"#) == ["/events/1"])
        #expect(pointers(#"{"url": "https://x.example/", "events": ["layout"], "accounts": ["ok", "no/pe"]}"#) == ["/accounts/1"])
        #expect(pointers(#"{"url": "https://x.example/", "events": ["layout"], "secret": "x"}"#) == ["/secret"])
    }
}
