import Foundation
import Logging
import MicroHTTPD
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

@testable import TabService

/// `--per-address-held` over sockets, every poll from 127.0.0.1: the poll beyond the share is answered 503 with
/// `Retry-After` at once while the others stay held; 0 holds as many as the total allows (behind an L4 balancer
/// that hides client addresses, every phone shares a few).
@Suite struct PerAddressHeldLiveTests {
    /// A live service whose held long-polls per address are `perAddress`, and whose per-address connections are
    /// `perAddressConnections`.
    static func application(perAddress: Int, perAddressConnections: Int, connections: Int) async throws -> ServerApplication {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var http = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
        http.perIPConnectionLimit = perAddressConnections
        http.connectionLimit = connections
        var service = ServiceConfiguration(adminTokens: [("tester", ServiceHarness.token)], variantCacheBytes: 64 << 20)
        service.heldRequestsPerAddress = perAddress
        return try await ServerApplication(
            store: MemoryStore(), configs: ServiceHarness.repository.appendingPathComponent("configs").path, service: service, http: http,
            logger: logger)
    }

    static func pollRequest(_ application: ServerApplication) async throws -> String {
        let current = try await HTTPTestClient(port: application.port).send("GET", "/v1/accounts/jack/tabs")
        let etag = try #require(current.header("ETag"))
        return "GET /v1/accounts/jack/tabs?wait=60 HTTP/1.1\r\nHost: x\r\nIf-None-Match: \(etag)\r\n\r\n"
    }

    /// A write to jack's layout: every held poll is answered 200.
    static func change(_ application: ServerApplication) async throws {
        let put = try await HTTPTestClient(port: application.port).send(
            "PUT", "/v1/accounts/jack/layout", headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", "*")]),
            body: document(["Home", "Woken"]))
        #expect(put.status == 200)
    }

    @Test func thePollBeyondTheShareOfOneAddressIsAnswered503() async throws {
        let application = try await Self.application(perAddress: 3, perAddressConnections: 1024, connections: 1024)
        defer { application.stop() }
        let polls = try HeldConnections.start(port: application.port, count: 4, request: try await Self.pollRequest(application))
        defer { polls.end() }
        #expect(try await polls.readLine(seconds: 30) == "sent")
        #expect(try await eventually(seconds: 30) { application.service.parts.heldBudget.held == 3 })
        polls.writeLine("go")
        try await Task.sleep(for: .milliseconds(100))
        #expect(application.service.parts.heldBudget.held == 3)
        try await Self.change(application)  // wakes the held polls with 200
        let outcome = try await HeldConnections.outcome(polls)
        #expect(outcome["200"] == 3 && outcome["503"] == 1 && outcome.statuses.count == 2, "\(outcome)")
    }

    @Test func zeroHoldsBeyondTheOld512FromOneAddress() async throws {
        let count = 600
        let application = try await Self.application(perAddress: 0, perAddressConnections: 0, connections: count * 2 + 256)
        defer { application.stop() }
        #expect(application.service.parts.heldBudget.perAddress == 0)
        let polls = try HeldConnections.start(port: application.port, count: count, request: try await Self.pollRequest(application))
        defer { polls.end() }
        #expect(try await polls.readLine(seconds: 60) == "sent")
        #expect(try await eventually(seconds: 30) { application.service.parts.heldBudget.held == count })
        polls.writeLine("go")
        try await Self.change(application)
        let outcome = try await HeldConnections.outcome(polls)
        #expect(outcome["200"] == count && outcome.statuses.count == 1, "\(outcome)")
    }

    @Test func heldLimitsKeepZeroPerAddressAsNoLimit() {
        var http = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
        http.connectionLimit = 8192
        http.perIPConnectionLimit = 1024
        #expect(ServerApplication.heldRequestLimits(http, total: .max, perAddress: 0).perAddress == 0)
        #expect(ServerApplication.heldRequestLimits(http, total: .max, perAddress: 512).perAddress == 512)
        #expect(ServerApplication.heldRequestLimits(http, total: .max, perAddress: 4096).perAddress == 1008)
        http.perIPConnectionLimit = 0
        #expect(ServerApplication.heldRequestLimits(http, total: .max, perAddress: 4096).perAddress == 4096)
    }
}
