import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

/// A strings table written while apps read: readers of the locales it does not feed keep their representations
/// (same tag, still 304, nothing compiled again); readers of the locale it feeds get the new one.
@Suite struct StringsWriteReadersTests {
    @Test func aStringsTableOfAnotherLocaleLeavesReadersAsTheyWere() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let first = try await client.send(
            "PUT", "/v1/strings/de", headers: ServiceHarness.admin([("Content-Type", "text/plain")]),
            body: Array(#""HOME_TAB" = "Startseite";"#.utf8))
        #expect(first.status == 201)
        let germanTag = try #require(first.header("ETag"))
        let french = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8")])
        let tag = try #require(french.header("ETag"))
        let misses = harness.service.metrics.cacheMisses.load(ordering: .relaxed)

        let german = try await client.send(
            "PUT", "/v1/strings/de", headers: ServiceHarness.admin([("Content-Type", "text/plain"), ("If-Match", germanTag)]),
            body: Array(#""HOME_TAB" = "Zuhause";"#.utf8))
        #expect(german.status == 200)
        let again = try await client.send(
            "GET", "/v1/accounts/jack/tabs", headers: [("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"), ("If-None-Match", tag)])
        #expect(again.status == 304 && again.header("ETag") == tag)
        #expect(harness.service.metrics.cacheMisses.load(ordering: .relaxed) == misses, "nothing compiled again for fr")

        // The fr table itself: fr readers get what it makes.
        let frenchTable = try await client.send("GET", "/v1/strings/fr", headers: ServiceHarness.admin())
        let frenchTag = try #require(frenchTable.header("ETag"))
        let rewritten = try await client.send(
            "PUT", "/v1/strings/fr", headers: ServiceHarness.admin([("Content-Type", "text/plain"), ("If-Match", frenchTag)]),
            body: Array(#""HOME_TAB" = "Maison neuve";"#.utf8))
        #expect(rewritten.status == 200)
        let changed = try await client.send(
            "GET", "/v1/accounts/jack/tabs", headers: [("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"), ("If-None-Match", tag)])
        #expect(harness.service.metrics.cacheMisses.load(ordering: .relaxed) > misses, "the fr table feeds fr: compiled again")
        #expect(changed.status == 200 || changed.header("ETag") == tag, "a changed representation is a 200 with its new tag")
    }
}
