import Foundation
import TabServiceTestSupport
import Testing

@testable import TabService

/// The client plane's declared inputs: a query argument over the header field that stands for it (the header not read
/// when the query is there), their refusals, and `openapi.yaml` listing every input its handlers read.
@Suite struct ClientPlaneInputsTests {
    private static func detail(_ answer: TestResponse) -> String? { CollectionHarness.object(answer)["detail"] as? String }

    @Test func aQueryChoiceWinsAndTheHeaderItStandsForIsNotRead() async {
        let harness = ReadSideHarness()
        let both = await harness.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("platform", "iphone")], headers: [("X-Client-Platform", "toaster")]))
        #expect(both.status == 200)
        let header = await harness.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("X-Client-Platform", "toaster")]))
        #expect(header.status == 400 && Self.detail(header)?.hasPrefix("platform 'toaster' is not one of") == true, "\(header.text)")
        let install = await harness.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("X-Install-Id", String(repeating: "i", count: 129))]))
        #expect(install.status == 400)
    }

    @Test func waitIsReadFromPreferOnlyWithoutTheQuery() async {
        let harness = ReadSideHarness()
        let query = await harness.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("wait", "soon")]))
        #expect(query.status == 400 && Self.detail(query) == "wait is a whole number of seconds ≥ 0, not 'soon'")
        let prefer = await harness.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", headers: [("Prefer", "respond-async, wait=later")]))
        #expect(prefer.status == 400 && Self.detail(prefer) == "wait is a whole number of seconds ≥ 0, not 'later'")
        let both = await harness.respond(
            to: TestRequest(.get, "/v1/accounts/jack/tabs", query: [("wait", "0")], headers: [("Prefer", "wait=later")]))
        #expect(both.status == 200 && both.header("Cache-Control") == "no-store", "a long-poll's answer")
        let manifest = await harness.respond(to: TestRequest(.get, "/v1/accounts/jack/tabs/manifest", headers: [("Prefer", "wait=x")]))
        #expect(manifest.status == 400 && Self.detail(manifest) == "wait is a whole number of seconds ≥ 0, not 'x'")
    }

    @Test func aBadAccountIs400OnEveryClientPlaneRoute() async {
        let harness = ReadSideHarness()
        for path in ["tabs", "tabs/manifest", "tabs/bundle", "tabs/preview.svg", "ApplicationHierarchy.plist"] {
            let answer = await harness.respond(to: TestRequest(.get, "/v1/accounts/no%20spaces/\(path)"))
            #expect(answer.status == 400 && answer.header("Content-Type") == "application/problem+json", "\(path)")
        }
    }

    @Test func everyOperationThatDeclaresIfMatchAnswersAndDocuments412() async {
        let harness = ReadSideHarness()
        let yaml = OpenAPIDocument.yaml
        for path in ["tabs", "ApplicationHierarchy.plist", "tabs/preview.svg"] {
            let answer = await harness.respond(to: TestRequest(.get, "/v1/accounts/jack/\(path)", headers: [("If-Match", "\"stale\"")]))
            #expect(answer.status == 412, "\(path): \(answer.status)")
            guard let start = yaml.range(of: "\n  /v1/accounts/{account}/\(path):\n") else {
                Issue.record("\(path) is not in openapi.yaml")
                continue
            }
            let rest = yaml[start.upperBound...]
            let get = rest.range(of: "\n    head:").map { rest[..<$0.lowerBound] } ?? rest
            #expect(get.contains("{name: If-Match, in: header") && get.contains("'412':"), "\(path) declares If-Match without a 412")
        }
    }

    @Test func openAPIListsEveryInputTheClientPlaneReads() {
        let representation = [
            "locale", "platform", "X-Client-Platform", "appVersion", "X-App-Version", "environment", "Tabs-Environment", "installId",
            "X-Install-Id", "wait", "Prefer", "Accept", "Accept-Language", "Accept-Encoding", "If-None-Match", "If-Modified-Since",
        ]
        let expected: [(String, [String])] = [
            ("/v1/accounts/{account}/tabs", representation + ["version"]),
            ("/v1/accounts/{account}/ApplicationHierarchy.plist", representation),
            ("/v1/accounts/{account}/tabs/preview.svg", representation + ["scheme", "selected"]),
            ("/v1/accounts/{account}/tabs/manifest", ["environment", "Tabs-Environment", "wait", "Prefer", "If-None-Match"]),
            (
                "/v1/accounts/{account}/tabs/bundle",
                ["locale", "platform", "X-Client-Platform", "appVersion", "X-App-Version", "environment"]
            ),
            ("/v1/keys", ["If-None-Match"]),
        ]
        let yaml = OpenAPIDocument.yaml
        for (template, names) in expected {
            guard let start = yaml.range(of: "\n  \(template):\n") else {
                Issue.record("\(template) is not in openapi.yaml")
                continue
            }
            let rest = yaml[start.upperBound...]
            let get = rest.range(of: "\n    head:").map { rest[..<$0.lowerBound] } ?? rest
            for name in names {
                let listed =
                    get.contains("{name: \(name), in:")
                    || (name == "locale" && get.contains("clientLocale")) || (name == "platform" && get.contains("clientPlatform"))
                    || (name == "appVersion" && get.contains("clientAppVersion"))
                #expect(listed, "\(template) does not list \(name)")
            }
        }
    }
}
