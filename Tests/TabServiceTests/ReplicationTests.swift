import Foundation
import TabServiceTestSupport
import TabStorePostgres
import TabTestSupport
import Testing

/// Two `tabserver serve` processes on one PostgreSQL database, as two replicas behind a load balancer.
@Suite(.serialized) struct ReplicationTests {
    static var serverURL: String? { ProcessInfo.processInfo.environment["TABSERVER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } }
    static var enabled: Bool { serverURL != nil && FileManager.default.isExecutableFile(atPath: ServerProcess.binary) }

    static func freshDatabase() throws -> String {
        let name = "r_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        return try PostgresStore.createDatabase(serverURL: try #require(serverURL), name: name)
    }

    /// Two replicas on a fresh database, their listeners listening (the caller kills both when done).
    static func twoReplicas(environment: [String: String] = ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token]) async throws -> (
        ServerProcess, ServerProcess
    ) {
        let database = try freshDatabase()
        let directory = NSTemporaryDirectory()
        let a = try await ServerProcess.start(store: database, directory: directory, environment: environment)
        let b = try await ServerProcess.start(store: database, directory: directory, environment: environment)
        try await Task.sleep(for: .milliseconds(300))
        return (a, b)
    }

    /// Writes version 1 of `account` through `port`, a draft version 2, and starts a rollout of it with `plan`.
    func startRollout(_ port: UInt16, _ account: String, plan: String) async throws {
        let first = try await put(port, account, ["one"])
        let etag = try #require(first.header("ETag"))
        let client = HTTPTestClient(port: port)
        let draft = try await client.send(
            "PUT", "/v1/accounts/\(account)/layout?publish=false",
            headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", etag)]), body: document(["one", "two"]))
        #expect(draft.status == 200)
        let started = try await client.send(
            "POST", "/v1/accounts/\(account)/layout/rollout",
            headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", etag)]), body: Array(plan.utf8))
        #expect(started.status == 201, "\(started.text)")
    }

    func put(_ port: UInt16, _ account: String, _ titles: [String], ifMatch: String? = nil) async throws -> HTTPTestClient.Response {
        var headers = ServiceHarness.admin([("Content-Type", "application/json")])
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        return try await HTTPTestClient(port: port).send("PUT", "/v1/accounts/\(account)/layout", headers: headers, body: document(titles))
    }

    @Test(.enabled(if: ReplicationTests.enabled))
    func aWriteThroughOneReplicaReachesTheOtherWithinASecond() async throws {
        let database = try Self.freshDatabase()
        let directory = NSTemporaryDirectory()
        let a = try await ServerProcess.start(store: database, directory: directory)
        defer { a.kill9() }
        let b = try await ServerProcess.start(store: database, directory: directory)
        defer { b.kill9() }

        let created = try await put(a.port, "shared", ["one"])
        #expect(created.status == 201)
        let written = Date()
        var seen: HTTPTestClient.Response?
        while Date().timeIntervalSince(written) < 1.0 {
            let response = try await HTTPTestClient(port: b.port).send("GET", "/v1/accounts/shared/tabs")
            if response.json?["layout"] as? String == "shared" {
                seen = response
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let onB = try #require(seen, "replica B did not see the write within 1 s")
        let onA = try await HTTPTestClient(port: a.port).send("GET", "/v1/accounts/shared/tabs")
        #expect(onA.header("ETag") == onB.header("ETag"), "replicas give the same ETag for the same content")
        #expect(onA.body == onB.body)

        let etag = try #require(created.header("ETag"))
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<16 {
                let port = i % 2 == 0 ? a.port : b.port
                group.addTask { try await self.put(port, "shared", ["writer \(i)"], ifMatch: etag).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 200 }.count == 1, "exactly one of 16 writers on 2 replicas wins: \(statuses)")
        #expect(statuses.filter { $0 == 412 }.count == 15)
    }

    /// A replica's own write is in its snapshot when the write answers; the notification of it is for the others,
    /// so the writer does not read and parse its own write again.
    @Test(.enabled(if: ReplicationTests.enabled))
    func aReplicaReadsOnlyOtherReplicasChangesBack() async throws {
        let (a, b) = try await Self.twoReplicas()
        defer {
            a.kill9()
            b.kill9()
        }
        #expect(try await put(a.port, "own", ["one"]).status == 201)
        let replicated = { (port: UInt16) async throws -> Int in
            let text = try await HTTPTestClient(port: port).send("GET", "/metrics").text
            let line = text.split(separator: "\n").first { $0.hasPrefix("tabserver_replicated_changes_total ") }
            return line.flatMap { Int($0.split(separator: " ")[1]) } ?? -1
        }
        for _ in 0..<50 where try await replicated(b.port) < 1 { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await replicated(b.port) == 1, "the other replica read the change")
        #expect(try await replicated(a.port) == 0, "the writer did not read its own change back")
    }
}

/// Tokens across replicas: a revocation or rotation on one replica holds on the other within a second.
extension ReplicationTests {
    func makeToken(_ port: UInt16, _ body: String) async throws -> (id: String, secret: String) {
        let made = try await HTTPTestClient(port: port).send(
            "POST", "/v1/tokens", headers: ServiceHarness.admin([("Content-Type", "application/json")]), body: Array(body.utf8))
        try #require(made.status == 201, "\(made.text)")
        return (try #require(made.json?["id"] as? String), try #require(made.json?["token"] as? String))
    }

    /// The status `secret` gets on `GET /v1/accounts` through `port`.
    func status(_ port: UInt16, _ secret: String) async throws -> Int {
        try await HTTPTestClient(port: port).send("GET", "/v1/accounts", headers: [("Authorization", "Bearer \(secret)")]).status
    }

    /// Polls `port` until `secret` gets `expected`; the seconds it took, nil after `limit` seconds.
    func secondsUntil(_ port: UInt16, _ secret: String, gets expected: Int, limit: Double = 3) async throws -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < limit {
            if try await status(port, secret) == expected { return Date().timeIntervalSince(start) }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    @Test(.enabled(if: ReplicationTests.enabled))
    func aTokenRevokedOnOneReplicaIsRefusedOnTheOtherWithinASecond() async throws {
        let (a, b) = try await Self.twoReplicas()
        defer {
            a.kill9()
            b.kill9()
        }

        let token = try await makeToken(a.port, #"{"name": "dashboard", "scopes": ["read"]}"#)
        let made = try #require(try await secondsUntil(b.port, token.secret, gets: 200), "B never accepted the new token")
        #expect(made < 1, "B accepted the token made on A after \(made) s")

        let rotated = try await HTTPTestClient(port: a.port).send("POST", "/v1/tokens/\(token.id)/rotate", headers: ServiceHarness.admin())
        let second = try #require(rotated.json?["token"] as? String)
        let retired = try #require(try await secondsUntil(b.port, token.secret, gets: 401), "B kept the rotated secret")
        #expect(retired < 1, "B refused the old secret after \(retired) s")
        #expect(try await status(b.port, second) == 200)

        #expect(
            try await HTTPTestClient(port: b.port).send("DELETE", "/v1/tokens/\(token.id)", headers: ServiceHarness.admin()).status == 204)
        let revoked = try #require(try await secondsUntil(a.port, second, gets: 401), "A kept the revoked token")
        #expect(revoked < 1, "A refused the revoked token after \(revoked) s")
        print("token replication: made \(made) s, rotated \(retired) s, revoked \(revoked) s")
    }
}
