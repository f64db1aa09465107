import Foundation
import Testing

@testable import TabClient

/// `X-Install-Id` and `Tabs-Environment` on the wire (a scripted responder on a real socket), environment names
/// checked before anything is sent, and a cache that never serves one environment's layout in another.
@Suite struct EnvironmentTests {
    static let json = [("Content-Type", "application/json")]

    /// A valid layout unlike the fixture bundle's, and its body.
    static func serverLayout(title: String, version: Int = 2) throws -> (CompiledLayout, Data) {
        var layout = try Fixtures.jackBundle().representations[0].layout
        layout.tabs[0].title = title
        layout.version = version
        return (layout, try JSONEncoder().encode(layout))
    }

    @Test func everyRequestSendsTheInstallIDAndTheEnvironment() async throws {
        let (first, firstBody) = try Self.serverLayout(title: "Staging home")
        let (second, secondBody) = try Self.serverLayout(title: "Staging home 2", version: 3)
        let replies: [RawHTTPResponder.Reply] = [
            .respond(status: 200, headers: Self.json + [("ETag", "\"s1\"")], body: firstBody),  // refresh
            .respond(status: 304, headers: [("ETag", "\"s1\"")]),  // revalidation
            .respond(status: 200, headers: Self.json + [("ETag", "\"s2\"")], body: secondBody),  // long-poll
        ]
        let responder = try RawHTTPResponder { replies[min($0, replies.count - 1)] }
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, environment: "staging", cache: cache),
            bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .updated(first))
        #expect(try await client.refresh() == .notModified)
        var updates = client.updates().makeAsyncIterator()
        #expect(await updates.next() == second)

        let requests = responder.requests
        try #require(requests.count == 3)
        #expect(requests.map(\.target) == ["/v1/accounts/jack/tabs", "/v1/accounts/jack/tabs", "/v1/accounts/jack/tabs?wait=30"])
        #expect(requests[1].header("If-None-Match") == "\"s1\"" && requests[2].header("If-None-Match") == "\"s1\"")
        for request in requests {
            #expect(request.header("X-Install-Id") == client.installID)
            #expect(request.header("Tabs-Environment") == "staging")
        }
        #expect(InstallIDTests.isLowercaseUUIDv4(client.installID))
    }

    @Test func withoutAnEnvironmentNoEnvironmentHeaderIsSent() async throws {
        let responder = try RawHTTPResponder { _ in .respond(status: 304, headers: [("ETag", "\"bundled-identity\"")]) }
        let client = try TabClient(
            configuration: Fixtures.configuration(server: responder.url, installID: "the-app's-own-id"),
            bundle: try Fixtures.jackBundle())
        #expect(try await client.refresh() == .notModified)
        let request = try #require(responder.requests.first)
        #expect(request.header("Tabs-Environment") == nil)
        #expect(request.header("X-Install-Id") == "the-app's-own-id")
        #expect(!request.head.lowercased().contains("tabs-environment"))
    }

    @Test(arguments: [
        ("", "empty"),
        ("Staging", "starts with a lowercase letter"),
        ("1production", "starts with a lowercase letter"),
        ("_staging", "starts with a lowercase letter"),
        ("pre prod", "only lowercase letters a-z, digits, '-' and '_'"),
        ("staging.eu", "only lowercase letters a-z, digits, '-' and '_'"),
        ("prodé", "only lowercase letters a-z, digits, '-' and '_'"),
        ("staging\r\nX-Install-Id: forged", "only lowercase letters a-z, digits, '-' and '_'"),
        ("a" + String(repeating: "b", count: 32), "at most 32 characters; this one has 33"),
    ])
    func anInvalidEnvironmentIsRefusedBeforeAnythingIsSent(name: String, reason: String) async throws {
        let responder = try RawHTTPResponder { _ in .respond(status: 500) }
        let configuration = Fixtures.configuration(server: responder.url, environment: name)
        let bundle = try Fixtures.jackBundle()
        let error = #expect(throws: TabClientError.self) { try TabClient(configuration: configuration, bundle: bundle) }
        #expect(error == .invalidEnvironment(name, reason: Self.reason(of: error) ?? ""))
        #expect(Self.reason(of: error)?.contains(reason) == true, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("invalid environment \(name.debugDescription): ") == true)
        await #expect(throws: TabClientError.self) { _ = try await TabClient.downloadBundle(configuration) }
        #expect(responder.requests.isEmpty)
    }

    static func reason(of error: TabClientError?) -> String? {
        if case .invalidEnvironment(_, let reason) = error { reason } else { nil }
    }

    @Test(arguments: ["a", "staging", "eu-west_2", "z" + String(repeating: "9", count: 31)])
    func aValidEnvironmentIsAccepted(name: String) throws {
        let refusing = try RefusingPort()
        let client = try TabClient(
            configuration: Fixtures.configuration(server: refusing.url, environment: name), bundle: try Fixtures.jackBundle())
        #expect(client.configuration.environment == name)
        withExtendedLifetime(refusing) {}
    }

    @Test func aCachedLayoutIsNeverShownInAnotherEnvironment() async throws {
        let (staging, stagingBody) = try Self.serverLayout(title: "Staging home")
        let (production, productionBody) = try Self.serverLayout(title: "Production home")
        // Answers by the environment the request names, as the server does (the default one has no layout here).
        let byEnvironment = try RawHTTPResponder { _, request in
            switch request.header("Tabs-Environment") {
            case "staging": .respond(status: 200, headers: Self.json + [("ETag", "\"staging\"")], body: stagingBody)
            case "production": .respond(status: 200, headers: Self.json + [("ETag", "\"production\"")], body: productionBody)
            default: .respond(status: 404)
            }
        }
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let bundle = try Fixtures.jackBundle()

        let stagingClient = try TabClient(
            configuration: Fixtures.configuration(server: byEnvironment.url, environment: "staging", cache: cache), bundle: bundle)
        #expect(try await stagingClient.refresh() == .updated(staging))
        #expect(byEnvironment.requests.last?.header("Tabs-Environment") == "staging")

        // The default environment, and another named one, on the same cache directory: the bundle, not staging's layout.
        let defaultClient = try TabClient(configuration: Fixtures.configuration(server: byEnvironment.url, cache: cache), bundle: bundle)
        #expect(defaultClient.source == .bundle && defaultClient.current == bundle.representations[0].layout)
        await #expect(throws: TabClientError.unexpectedStatus(404, detail: nil, retryAfter: nil)) { try await defaultClient.refresh() }
        #expect(defaultClient.source == .bundle)
        let productionClient = try TabClient(
            configuration: Fixtures.configuration(server: byEnvironment.url, environment: "production", cache: cache), bundle: bundle)
        #expect(productionClient.source == .bundle)
        #expect(try await productionClient.refresh() == .updated(production))
        #expect(byEnvironment.requests.last?.header("Tabs-Environment") == "production")

        // Each environment's next launch shows its own layout; one install id throughout.
        let stagingAgain = try TabClient(
            configuration: Fixtures.configuration(server: refusing.url, environment: "staging", cache: cache), bundle: bundle)
        #expect(stagingAgain.source == .cache && stagingAgain.current == staging && stagingAgain.validators == ["\"staging\""])
        let productionAgain = try TabClient(
            configuration: Fixtures.configuration(server: refusing.url, environment: "production", cache: cache), bundle: bundle)
        #expect(productionAgain.source == .cache && productionAgain.current == production)
        #expect(Set([stagingClient, defaultClient, productionClient, stagingAgain].map(\.installID)).count == 1)
        #expect(Set(byEnvironment.requests.map { $0.header("X-Install-Id") }) == [stagingClient.installID])
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: cache.path).sorted() == [
                "install-id", "jack@production.tabs.json", "jack@staging.tabs.json",
            ])
    }

    @Test func downloadingABundleNamesTheEnvironmentAndNoInstall() async throws {
        let body = try Data(contentsOf: Fixtures.directory.appendingPathComponent("jack.bundle.json"))
        let responder = try RawHTTPResponder { _ in .respond(status: 200, headers: Self.json, body: body) }
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let bundle = try await TabClient.downloadBundle(
            Fixtures.configuration(server: responder.url, environment: "staging", cache: cache))
        #expect(bundle == (try Fixtures.jackBundle()))
        let request = try #require(responder.requests.first)
        #expect(request.target == "/v1/accounts/jack/tabs/bundle?locale=en")
        #expect(request.header("Tabs-Environment") == "staging")
        // The bundle is the stable version, the same for every install: no id is sent, none is made.
        #expect(request.header("X-Install-Id") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path).isEmpty)
    }
}
