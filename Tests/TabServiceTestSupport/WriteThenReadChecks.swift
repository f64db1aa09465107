import Foundation
import MicroHTTPD
import TabService
import Testing

/// A write and the reads that follow it, one body for both ways of reaching the service (``ServiceClient``): run in
/// process by `WriteThenReadInProcessTests` and over a socket by `WriteThenReadSocketTests`.
package enum WriteThenReadChecks {
    /// A new layout is what the account's next read gets, under a new ETag that the old one no longer matches.
    package static func aWrittenLayoutIsTheNextRead(_ client: some ServiceClient) async throws {
        let before = try await client.send(.get, "/v1/accounts/written/tabs")
        let oldETag = try #require(before.header("ETag"), "\(before.status) \(before.text)")

        let put = try await client.send(
            .put, "/v1/accounts/written/layout", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: document(["One", "Two"]))
        #expect(put.status == 201 && put.header("Layout-Version") == "1", "\(put.status) \(put.text)")

        let after = try await client.send(.get, "/v1/accounts/written/tabs", headers: [("If-None-Match", oldETag)])
        #expect(after.status == 200, "the old ETag no longer matches")
        let titles = (jsonObject(after.body)["tabs"] as? [[String: Any]])?.map { $0["title"] as? String }
        #expect(titles == ["One", "Two"], "\(after.text)")
        let newETag = try #require(after.header("ETag"))
        #expect(newETag != oldETag)
        let revalidated = try await client.send(.get, "/v1/accounts/written/tabs", headers: [("If-None-Match", newETag)])
        #expect(revalidated.status == 304)
    }

    /// A write that names a version it did not read (`If-Match`) is 412 and changes nothing; one that names the
    /// current version is applied.
    package static func aStaleIfMatchIs412AndTheCurrentOneWrites(_ client: some ServiceClient) async throws {
        let admin = ServiceHarness.admin([("Content-Type", "application/json")])
        let first = try await client.send(.put, "/v1/accounts/guarded/layout", headers: admin, body: document(["First"]))
        let etag = try #require(first.header("ETag"), "\(first.status) \(first.text)")
        let second = try await client.send(
            .put, "/v1/accounts/guarded/layout", headers: admin + [("If-Match", etag)], body: document(["Second"]))
        #expect(second.status == 200 && second.header("Layout-Version") == "2", "\(second.status) \(second.text)")

        let stale = try await client.send(
            .put, "/v1/accounts/guarded/layout", headers: admin + [("If-Match", etag)], body: document(["Stale"]))
        #expect(stale.status == 412 && stale.header("Content-Type") == "application/problem+json", "\(stale.text)")
        let read = try await client.send(.get, "/v1/accounts/guarded/tabs")
        let titles = (jsonObject(read.body)["tabs"] as? [[String: Any]])?.map { $0["title"] as? String }
        #expect(titles == ["Second"], "the refused write changed nothing")
    }
}
