import Foundation
import MicroHTTPD
import TabService
import Testing

/// Refusals as `application/problem+json`, one body for both ways of reaching the service (``ServiceClient``): run in
/// process by `ProblemAnswersInProcessTests` and over a socket by `ProblemAnswersSocketTests`.
package enum ProblemAnswerChecks {
    /// Every bad query argument of a route is one 400 naming each by its JSON Pointer, in the route's declared order.
    package static func badQueryArgumentsAreOne400WithEveryPointer(_ client: some ServiceClient) async throws {
        let answer = try await client.send(
            .get, "/v1/audit", query: [("limit", "0"), ("after", "zzz")], headers: ServiceHarness.admin())
        #expect(answer.status == 400 && answer.header("Content-Type") == "application/problem+json", "\(answer.text)")
        let problem = jsonObject(answer.body)
        #expect(problem["status"] as? Int == 400)
        let pointers = (problem["errors"] as? [[String: Any]])?.compactMap { $0["pointer"] as? String }
        #expect(pointers == ["/after", "/limit"], "\(answer.text)")
        #expect(answer.header("Request-Id") != nil, "an error carries its request id")
    }

    /// A layout that does not compile is 422 with each error at its pointer, and nothing is stored.
    package static func anInvalidLayoutIs422AtItsPointerAndStoresNothing(_ client: some ServiceClient) async throws {
        let bad = try await client.send(
            .put, "/v1/accounts/broken/layout", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: Array(#"{"tabs":[{"title":"A","rootViewController":"A","reselect":"x"}]}"#.utf8))
        #expect(bad.status == 422 && bad.header("Content-Type") == "application/problem+json", "\(bad.text)")
        let errors = try #require(jsonObject(bad.body)["errors"] as? [[String: Any]])
        #expect(errors.first?["pointer"] as? String == "/tabs/0/reselect" && errors.first?["line"] as? Int == 1)
        let stored = try await client.send(.get, "/v1/accounts/broken/layout", headers: ServiceHarness.admin())
        #expect(stored.status == 404)
    }

    /// A client-plane error is a problem no shared cache keeps; an unknown method is 405 with `Allow`.
    package static func clientPlaneErrorsAreUncachedProblems(_ client: some ServiceClient) async throws {
        let badAccount = try await client.send(.get, "/v1/accounts/no%20such/tabs")
        #expect(badAccount.status == 400 && badAccount.header("Content-Type") == "application/problem+json")
        #expect(badAccount.header("Cache-Control") == "no-store")
        let wrongMethod = try await client.send(.delete, "/v1/accounts/jack/tabs")
        #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "GET, HEAD", "\(wrongMethod.headers)")
        if client.overSocket {
            // Refused before the body, the answer closes the connection (libmicrohttpd's `Connection: close`); the
            // client opens another for the next request.
            #expect(wrongMethod.header("Connection")?.lowercased() == "close")
        } else {
            #expect(wrongMethod.header("Connection") == nil)
        }
        #expect(try await client.send(.get, "/v1/accounts/jack/tabs").status == 200, "the next request is answered")
    }
}
