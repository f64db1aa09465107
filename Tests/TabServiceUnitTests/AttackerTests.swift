import Foundation
import Logging
import TabConfigs
import TabServiceTestSupport
import TabStore
import Testing

@testable import TabService

/// What an attacker tried against the newer surface (issue "Nobody can pin the cores"), in process: each test
/// failed before its fix.
@Suite struct AttackerTests {
    static let admin = [("Authorization", "Bearer \(ServiceHarness.token)")]
    static let wrong = [("Authorization", "Bearer wrong-token-0123456789")]

    static func service(_ configure: (inout ServiceConfiguration) -> Void = { _ in }) async throws -> TabService {
        try await ServiceHarness.inProcess(configure)
    }

    /// `Last-Event-ID: 18446744073709551615` trapped in the feed's catch-up (`sequence + 1`).
    @Test(arguments: [("Last-Event-ID", "18446744073709551615"), ("lastEventId", "18446744073709551615"), ("Last-Event-ID", "99999")])
    func aPositionBeyondTheFeedIsAReset(field: String, value: String) async throws {
        let service = try await Self.service()
        let request =
            field == "lastEventId"
            ? TestRequest(.get, "/v1/events", query: [(field, value)], headers: Self.admin)
            : TestRequest(.get, "/v1/events", headers: Self.admin + [(field, value)])
        let answer = await service.respond(to: request)
        #expect(answer.status == 200 && answer.text.contains("event: reset"), "\(value) → \(answer.status) \(answer.text)")
    }

    @Test(arguments: ["18446744073709551616", "-1", "+5", "1e3", "abc", "", "0x10", String(repeating: "9", count: 400)])
    func aPositionThatIsNoSequenceNumberIs400(value: String) async throws {
        let service = try await Self.service()
        let answer = await service.respond(to: TestRequest(.get, "/v1/events", headers: Self.admin + [("Last-Event-ID", value)]))
        #expect(answer.status == 400, "'\(value.prefix(20))' → \(answer.status)")
    }

    /// 64 copies of a locale (and tags that choose the same locale) are one representation; more parameters are 400.
    @Test func repeatedBundleLocalesDoNotMultiplyTheAnswer() async throws {
        let service = try await Self.service()
        let one = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/bundle", query: [("locale", "fr")]))
        let many = await service.respond(
            to: TestRequest(
                .get, "/v1/accounts/jack/tabs/bundle",
                query: Array(repeating: ("locale", "fr"), count: 60) + [("locale", "fr-FR"), ("locale", "fr-CA")]))
        #expect(one.status == 200 && many.status == 200)
        let representations = { (answer: TestResponse) -> Int in
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
            return (object?["representations"] as? [Any])?.count ?? -1
        }
        #expect(representations(one) == 1 && representations(many) == 1)
        let tooMany = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs/bundle", query: Array(repeating: ("locale", "fr"), count: 65)))
        #expect(tooMany.status == 400)
    }

    /// Behind a trusted proxy, the client's own `X-Forwarded-For` / `Forwarded` entries are not believed: rotating
    /// them neither dodges the lockout nor locks out an address of the attacker's choice.
    @Test func rotatingForwardedEntriesDoesNotDodgeTheLockout() async throws {
        let service = try await Self.service { $0.trustedProxies = ["10.0.0.1"] }
        var statuses: [Int] = []
        for attempt in 0..<14 {
            // What nginx with $proxy_add_x_forwarded_for passes on: the client's claim, then the address it saw.
            let request = TestRequest(
                .get, "/v1/accounts",
                headers: Self.wrong + [
                    ("X-Forwarded-For", "198.51.100.\(attempt), 203.0.113.7"), ("Forwarded", "for=192.0.2.\(attempt)"),
                ], clientAddress: "10.0.0.1")
            statuses.append(await service.respond(to: request).status)
        }
        #expect(statuses.suffix(4).allSatisfy { $0 == 429 }, "\(statuses)")
        // The address the attacker named is not locked out.
        let named = TestRequest(
            .get, "/v1/accounts", headers: Self.wrong + [("X-Forwarded-For", "198.51.100.3")], clientAddress: "10.0.0.1")
        #expect(await service.respond(to: named).status == 401)
        // Right-most untrusted, over a chain of proxies.
        #expect(ClientAddresses.rightMostUntrusted(["1.1.1.1", "2.2.2.2", "10.0.0.2"], trusted: ["10.0.0.1", "10.0.0.2"]) == "2.2.2.2")
        #expect(ClientAddresses.rightMostUntrusted(["10.0.0.2"], trusted: ["10.0.0.2"]) == "10.0.0.2")
    }

    /// Someone sharing the admin's address sends wrong tokens: the admin's own token still gets through.
    @Test func aValidTokenIsNeverRefusedForSomeoneElsesFailures() async throws {
        let service = try await Self.service()
        for _ in 0..<(Credentials.allowedFailures * 2) {
            _ = await service.respond(to: TestRequest(.get, "/v1/accounts", headers: Self.wrong, clientAddress: "192.0.2.50"))
        }
        let locked = await service.respond(to: TestRequest(.get, "/v1/accounts", headers: Self.wrong, clientAddress: "192.0.2.50"))
        #expect(locked.status == 429 && locked.header("Retry-After") != nil)
        let adminAnswer = await service.respond(to: TestRequest(.get, "/v1/accounts", headers: Self.admin, clientAddress: "192.0.2.50"))
        #expect(adminAnswer.status == 200)
    }

    /// RFC 7240: a quoted value and unknown parameters are a `wait` preference like any other.
    @Test(arguments: ["wait=\"1\"", "wait=1;foo", "wait = 1", "respond-async, wait=1", "wait=1; foo=\"a,b\""])
    func preferWaitAcceptsQuotedValuesAndParameters(field: String) async throws {
        #expect(WaitRequest.preferredWait(field) == "1", "\(field)")
        let service = try await Self.service()
        let first = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs"))
        let etag = try #require(first.header("ETag"))
        let held = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("If-None-Match", etag), ("Prefer", "wait=\"0\";x")]))
        #expect(held.status == 304 && held.header("Preference-Applied") == "wait=0")
    }

    /// Held long-polls are capped in total and per address: beyond, 503 at once; health and reads go on.
    @Test func heldRequestsCannotTakeEverySlot() async throws {
        let service = try await Self.service {
            $0.heldRequestLimit = 3
            $0.heldRequestsPerAddress = 2
        }
        let etag = try #require(await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs")).header("ETag"))
        let poll = { @Sendable (address: String) in
            TestRequest(.get, "/v1/accounts/jack/tabs", query: [("wait", "30")], headers: [("If-None-Match", etag)], clientAddress: address)
        }
        let held = (0..<2).map { _ in Task { await service.respond(to: poll("192.0.2.1")) } }
        while service.parts.heldBudget.held < 2 { try await Task.sleep(for: .milliseconds(5)) }
        let sameAddress = await service.respond(to: poll("192.0.2.1"))
        #expect(sameAddress.status == 503 && sameAddress.header("Retry-After") != nil)
        let third = Task { await service.respond(to: poll("192.0.2.2")) }
        while service.parts.heldBudget.held < 3 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await service.respond(to: poll("192.0.2.3")).status == 503)
        #expect(await service.respond(to: TestRequest(.get, "/healthz")).status == 200)
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs")).status == 200)
        service.serverWillStop()  // held requests answer 304 at once and give their slots back
        for task in held + [third] { #expect(await task.value.status == 304) }
        #expect(service.parts.heldBudget.held == 0)
    }

    /// A 330 KB source whose 4,096 titles each expand through a 4 KiB string would compile to ~17 MB: refused at
    /// write time with 422 and a pointer, nothing stored.
    @Test func aLayoutThatCompilesTooLargeIsRefusedAtWriteTime() async throws {
        let service = try await Self.service()
        let long = String(repeating: "x", count: 4000)
        let tabs = (0..<64).map { top in
            let children = (0..<63).map { child in
                #"{"id":"c\#(top)-\#(child)","title":"big","rootViewController":"CViewController"}"#
            }
            return
                #"{"id":"t\#(top)","title":"big","rootViewController":"TViewController","children":[\#(children.joined(separator: ","))]}"#
        }
        let source = #"{"schemaVersion":1,"strings":{"en":{"big":"\#(long)"}},"tabs":[\#(tabs.joined(separator: ","))]}"#
        #expect(source.utf8.count < 1 << 20)
        let answer = await service.respond(
            to: TestRequest(
                .put, "/v1/accounts/expanding/layout", headers: Self.admin + [("Content-Type", "application/json")],
                body: Array(source.utf8)))
        #expect(answer.status == 422 && answer.text.contains("\"pointer\":\"/tabs/"), "\(answer.status) \(answer.text.prefix(300))")
        #expect(await service.respond(to: TestRequest(.get, "/v1/accounts/expanding/layout", headers: Self.admin)).status == 404)
    }
}
