import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

/// The client plane over a real socket.
@Suite struct ReadPathTests {
    @Test func theVariantCacheStaysNearItsLimitAndRecompilesWhatItDropped() async throws {
        let harness = try await ServiceHarness(variantCacheBytes: 16 * 1024)
        let client = harness.client()
        let layout = Array(#"{"schemaVersion":1,"tabs":[{"id":"a","title":"A","rootViewController":"A"}]}"#.utf8)
        var etags: [String: String] = [:]
        for round in 0..<3 {
            for i in 0..<40 {
                if round == 0 {
                    let put = try await client.send(
                        "PUT", "/v1/accounts/bound\(i)/layout", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
                        body: layout)
                    #expect(put.status == 201)
                }
                let got = try await client.send("GET", "/v1/accounts/bound\(i)/tabs")
                #expect(got.status == 200)
                let etag = try #require(got.header("ETag"))
                #expect(etags[String(i)].map { $0 == etag } ?? true, "a recompiled variant has the same bytes and tag")
                etags[String(i)] = etag
            }
        }
        func metric(_ name: String) async throws -> Int {
            let text = try await client.send("GET", "/metrics").text
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(name + " ") })
            return try #require(Int(line.split(separator: " ")[1]))
        }
        try await Task.sleep(for: .milliseconds(200))  // the last sweep runs off the request thread
        #expect(try await metric("tabserver_variant_cache_evictions_total") > 0)
        #expect(try await metric("tabserver_variant_cache_misses_total") > 40, "dropped variants were compiled again")
        // 40 variants of ~2.5 KB each would be ~100 KB; the bound keeps it near 16 KiB (one sweep behind).
        #expect(try await metric("tabserver_variant_cache_bytes") < 48 * 1024)
    }

    @Test func getAnswers304WhenETagMatches() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let first = try await client.send("GET", "/v1/accounts/anyone/tabs", headers: [("Accept-Language", "fr")])
        #expect(first.status == 200)
        let etag = try #require(first.header("ETag"))
        #expect(first.json?["locale"] as? String == "fr")
        for condition in [etag, "\"other\", W/\(etag)", "*"] {
            let again = try await client.send(
                "GET", "/v1/accounts/anyone/tabs", headers: [("Accept-Language", "fr"), ("If-None-Match", condition)])
            #expect(again.status == 304, "If-None-Match: \(condition)")
            #expect(again.header("ETag") == etag)
            #expect(again.header("Vary") == first.header("Vary"))
            #expect(again.header("Content-Length") == first.header("Content-Length"), "a 304's Content-Length, when sent, is the 200's")
        }
        #expect(await client.leftoverAfter(milliseconds: 100).isEmpty, "no body after a 304")
        let stale = try await client.send(
            "GET", "/v1/accounts/anyone/tabs", headers: [("Accept-Language", "fr"), ("If-None-Match", "\"nope\"")])
        #expect(stale.status == 200)
    }

    @Test func ifModifiedSinceAppliesOnlyWithoutIfNoneMatch() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let first = try await client.send("GET", "/v1/accounts/jack/tabs")
        let modified = try #require(first.header("Last-Modified"))
        #expect(try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("If-Modified-Since", modified)]).status == 304)
        let both = try await client.send(
            "GET", "/v1/accounts/jack/tabs", headers: [("If-Modified-Since", modified), ("If-None-Match", "\"x\"")])
        #expect(both.status == 200)
        let old = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")])
        #expect(old.status == 200)
    }

    @Test func headAnswersGetHeadersWithoutBody() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let get = try await client.send("GET", "/v1/accounts/jill/tabs")
        let head = try await client.send("HEAD", "/v1/accounts/jill/tabs")
        #expect(head.status == 200)
        let comparable = { (r: HTTPTestClient.Response) in r.headers.filter { $0.0 != "Date" }.map { "\($0.0): \($0.1)" } }
        #expect(comparable(head) == comparable(get))
        #expect(await client.leftoverAfter(milliseconds: 100).isEmpty, "no body after HEAD")
    }

    @Test func negotiatesJSONPlistAndRefusesOthers() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let plist = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("Accept", "application/x-plist")])
        #expect(plist.header("Content-Type") == "application/x-plist")
        #expect(plist.text.hasPrefix("<?xml"))
        let json = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("Accept", "text/html;q=0.9, */*;q=0.1")])
        #expect(json.header("Content-Type") == "application/json")
        #expect(plist.header("ETag") != json.header("ETag"))
        let refused = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("Accept", "image/png")])
        #expect(refused.status == 406)
        #expect(refused.header("Content-Type") == "application/problem+json")
        let legacy = try await client.send("GET", "/v1/accounts/jack/ApplicationHierarchy.plist", headers: [("Accept", "application/json")])
        #expect(legacy.status == 406)
    }

    @Test func targetingByQueryOrHeader() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let everyone = try await client.send("GET", "/v1/accounts/ikhoyo/tabs")
        let ids = { (r: HTTPTestClient.Response) in (r.json?["tabs"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String } }
        #expect(ids(everyone) == ["home", "sample-web", "docs", "settings"])
        let phone = try await client.send("GET", "/v1/accounts/ikhoyo/tabs?platform=iphone&appVersion=1.9")
        #expect(ids(phone) == ["home", "sample-web"])
        let byHeader = try await client.send(
            "GET", "/v1/accounts/ikhoyo/tabs", headers: [("X-Client-Platform", "iPad"), ("X-App-Version", "2.0")])
        #expect(ids(byHeader) == ["home", "sample-web", "docs", "settings"])
        #expect(try await client.send("GET", "/v1/accounts/ikhoyo/tabs?platform=watch").status == 400)
        #expect(try await client.send("GET", "/v1/accounts/ikhoyo/tabs?appVersion=two").status == 400)
    }

    @Test func errorsAreProblemsWithTheRightStatus() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let notFound = try await client.send("GET", "/v1/accounts/x/tabs/extra")
        #expect(notFound.status == 404 && notFound.header("Content-Type") == "application/problem+json")
        #expect(notFound.json?["status"] as? Int == 404)
        let wrongMethod = try await client.send("POST", "/v1/accounts/x/tabs")
        #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "GET, HEAD")
        #expect(try await client.send("GET", "/v1/accounts/bad!id/tabs").status == 400)
        #expect(try await client.send("GET", "/v1/accounts/\(String(repeating: "a", count: 129))/tabs").status == 400)
    }

    @Test func keepsTheConnectionAliveAcrossRequests() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        for _ in 0..<5 { #expect(try await client.send("GET", "/v1/accounts/jack/tabs").status == 200) }
        #expect(try await client.send("GET", "/healthz").header("Connection") == nil, "no Connection: close on keep-alive")
    }

    @Test func answersPipelinedRequestsInOrder() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let two = Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/nope HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        #expect(try await client.raw(two).status == 200)
        #expect(try await client.raw([]).status == 404)
    }

    @Test func headerBlockOverTheLimitIs431() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let big = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("X-Filler", String(repeating: "a", count: 17 * 1024))])
        #expect(big.status == 431)
        let fits = try await harness.client().send(
            "GET", "/v1/accounts/jack/tabs", headers: [("X-Filler", String(repeating: "a", count: 15 * 1024))])
        #expect(fits.status == 200)
    }

    @Test func defaultFallbackSharesBytesAndETag() async throws {
        let harness = try await ServiceHarness()
        let a = try await harness.client().send("GET", "/v1/accounts/first/tabs")
        let b = try await harness.client().send("GET", "/v1/accounts/second/tabs")
        #expect(a.body == b.body && a.header("ETag") == b.header("ETag"))
        #expect(a.json?["layout"] as? String == "default")
    }

    @Test func operationsEndpoints() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        #expect(try await client.send("GET", "/healthz").status == 200)
        #expect(try await client.send("GET", "/readyz").status == 200)
        _ = try await client.send("GET", "/v1/accounts/jack/tabs")
        let metrics = try await client.send("GET", "/metrics")
        #expect(metrics.text.contains("tabserver_http_requests_total{route=\"tabs\",status=\"200\"} 1"))
        #expect(metrics.text.contains("tabserver_http_request_duration_seconds_bucket{le=\"+Inf\"}"))
        let openapi = try await client.send("GET", "/openapi.yaml")
        #expect(openapi.text.hasPrefix("openapi: 3.1"))
    }

    /// The OpenAPI description is generated from the route table: every template once, each route's method under it,
    /// HEAD beside each GET, and on scoped routes the security requirement with its scope and the 401, 403 and 429 answers.
    @Test func openAPIIsTheRouteTable() async throws {
        let yaml = OpenAPIDocument.yaml
        let table = TabService.routeTable
        for template in table.templates {
            let header = "\n  " + template.template + ":\n"
            #expect(yaml.components(separatedBy: header).count == 2, "\(template.template) appears once")
            let start = try #require(yaml.range(of: header))
            let rest = yaml[start.upperBound...]
            let section = rest[..<(rest.range(of: "\n  /")?.lowerBound ?? rest.endIndex)]
            for (method, index) in template.routes {
                let operation = "    " + method.token.lowercased() + ":\n"
                #expect(section.contains(operation), "\(template.template) lacks \(method.token)")
                if method == .get { #expect(section.contains("    head:\n"), "\(template.template) lacks HEAD") }
                if let scope = table.routes[index].access.scope {
                    #expect(
                        section.contains("security: [{bearer: [\(scope.rawValue)]}]") && section.contains("'401':")
                            && section.contains("'403':") && section.contains("'429':"))
                }
            }
        }
    }
}
