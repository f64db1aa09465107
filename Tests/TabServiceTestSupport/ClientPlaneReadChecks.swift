import Foundation
import MicroHTTPD
import TabService
import Testing

/// Client-plane reads, one body for both ways of reaching the service (``ServiceClient``): run in process by
/// `ClientPlaneReadsInProcessTests` and over a socket by `ClientPlaneReadsSocketTests`. Each takes a service with the
/// repository's `configs/` imported.
package enum ClientPlaneReadChecks {
    /// `…/tabs` is 200 with its ETag, 304 for that ETag (no body), 200 again for another one.
    package static func tabsAnswer200Then304ForItsETag(_ client: some ServiceClient) async throws {
        let identity = [("Accept-Encoding", "identity")]
        let first = try await client.send(.get, "/v1/accounts/jack/tabs", headers: identity)
        #expect(first.status == 200, "\(first.text)")
        let etag = try #require(first.header("ETag"))
        #expect(first.header("Content-Type") == "application/json" && first.header("Cache-Control") == "no-cache")
        #expect(first.header("Request-Id") == nil, "a representation carries no per-request header")
        #expect(!((jsonObject(first.body)["tabs"] as? [Any]) ?? []).isEmpty, "\(first.text)")
        if client.overSocket {
            // libmicrohttpd writes the length and the date; the service's answer carries neither.
            #expect(first.header("Content-Length") == "\(first.body.count)" && first.header("Date") != nil)
        } else {
            #expect(first.header("Content-Length") == nil && first.header("Date") == nil)
        }

        let again = try await client.send(.get, "/v1/accounts/jack/tabs", headers: identity + [("If-None-Match", etag)])
        #expect(again.status == 304 && again.header("ETag") == etag && again.body.isEmpty)
        let weak = try await client.send(.get, "/v1/accounts/jack/tabs", headers: identity + [("If-None-Match", "W/\(etag)")])
        #expect(weak.status == 304, "If-None-Match compares weakly")
        let other = try await client.send(.get, "/v1/accounts/jack/tabs", headers: identity + [("If-None-Match", "\"other\"")])
        #expect(other.status == 200 && other.body == first.body)
    }

    /// HEAD answers GET's status and headers without the body.
    package static func headAnswersGetsHeadersWithoutTheBody(_ client: some ServiceClient) async throws {
        let get = try await client.send(.get, "/v1/accounts/jack/tabs", headers: [("Accept-Encoding", "identity")])
        let head = try await client.send(.head, "/v1/accounts/jack/tabs", headers: [("Accept-Encoding", "identity")])
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.header("ETag") == get.header("ETag") && head.header("Content-Type") == get.header("Content-Type"))
        if client.overSocket {
            // libmicrohttpd announces the length GET's body has.
            #expect(head.header("Content-Length") == "\(get.body.count)")
        }
    }

    /// An account without a layout of its own gets `default`'s, under `default`'s ETag.
    package static func anAccountWithoutALayoutGetsDefaults(_ client: some ServiceClient) async throws {
        let fallback = try await client.send(.get, "/v1/accounts/nobody-here/tabs", headers: [("Accept-Encoding", "identity")])
        let defaults = try await client.send(.get, "/v1/accounts/default/tabs", headers: [("Accept-Encoding", "identity")])
        #expect(fallback.status == 200 && defaults.status == 200)
        #expect(fallback.header("ETag") == defaults.header("ETag"))
        let tabs = { (answer: TestResponse) in (jsonObject(answer.body)["tabs"] as? [[String: Any]])?.map { $0["id"] as? String } }
        #expect(tabs(fallback) != nil && tabs(fallback) == tabs(defaults))
    }
}

/// `body` as a JSON object (empty when it is none).
package func jsonObject(_ body: [UInt8]) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
}
