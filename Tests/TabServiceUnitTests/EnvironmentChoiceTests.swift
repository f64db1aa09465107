import Foundation
import MicroHTTPD
import Testing

@testable import TabService

/// The client plane's environment: the default `production` may be named (`?environment=`, `Tabs-Environment`) and
/// answers exactly as an unnamed request does; a name that does not exist is 404 on every client-plane route.
@Suite struct EnvironmentChoiceTests {
    @Test func namingTheDefaultEnvironmentAnswersAsBefore() async throws {
        let service = try await AttackerTests.service()
        let plain = await service.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Language", "en")]))
        let byQuery = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("environment", "production")], headers: [("Accept-Language", "en")]))
        let byHeader = await service.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Language", "en"), ("Tabs-Environment", "production")]))
        #expect(plain.status == 200 && byQuery.status == 200 && byHeader.status == 200)
        #expect(byQuery.body == plain.body && byHeader.body == plain.body)
        #expect(byQuery.header("ETag") == plain.header("ETag") && byHeader.header("Vary") == plain.header("Vary"))
        #expect(!(plain.header("Vary") ?? "").contains("Tabs-Environment"), "one environment: nothing varies on it")
    }

    @Test(arguments: [
        "/v1/accounts/jack/tabs", "/v1/accounts/jack/ApplicationHierarchy.plist", "/v1/accounts/jack/tabs/preview.svg",
        "/v1/accounts/jack/tabs/bundle",
    ])
    func anEnvironmentThatDoesNotExistIs404(path: String) async throws {
        let service = try await AttackerTests.service()
        let byQuery = await service.respond(to: TestRequest(.get, path, query: [("environment", "no-such-env")]))
        let byHeader = await service.respond(to: TestRequest(.get, path, headers: [("Tabs-Environment", "staging")]))
        for answer in [byQuery, byHeader] {
            #expect(answer.status == 404 && answer.header("Content-Type") == "application/problem+json", "\(path): \(answer.status)")
            #expect(answer.text.contains("no environment"), "\(answer.text)")
        }
        let selected = await service.respond(to: TestRequest(.get, path, query: [("environment", "qa"), ("selected", "home")]))
        #expect(selected.status == 404)
    }
}
