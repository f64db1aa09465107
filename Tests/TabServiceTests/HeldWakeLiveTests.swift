import Foundation
import MicroHTTPD
import Synchronization
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

/// A wake of thousands of held long-polls over sockets: every one is answered 200, and `/healthz` keeps answering
/// while they are (the resumer sends them a slice at a time, so the worker threads serve the probe between slices).
/// 2,000 by default (the server shares this test process's open-file limit with every other suite);
/// `HELD_WAKE_POLLS=10000 swift test --filter HeldWakeLiveTests` runs more.
@Suite struct HeldWakeLiveTests {
    /// `/healthz` asked on a new connection every 2 ms from a thread of its own until stopped: when each began and
    /// how long it took (a failed probe counts as taking forever).
    final class Prober: Sendable {
        let port: UInt16
        let probes = Mutex<[(started: Double, took: Double)]>([])
        let stopped = Atomic<Bool>(false)

        init(port: UInt16) {
            self.port = port
            Thread { [self] in
                while !self.stopped.load(ordering: .relaxed) {
                    let started = now()
                    var took = Double.infinity
                    if let connection = try? RawConnection(port: self.port) {
                        try? connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        if let answer = try? connection.readResponse(seconds: 10), answer.status == 200 { took = now() - started }
                    }
                    self.probes.withLock { $0.append((started, took)) }
                    usleep(2_000)
                }
            }.start()
        }

        func stop() -> [(started: Double, took: Double)] {
            stopped.store(true, ordering: .relaxed)
            return probes.withLock { $0 }
        }
    }

    @Test func healthzKeepsAnsweringWhileThousandsOfHeldPollsAreWoken() async throws {
        let count = Int(ProcessInfo.processInfo.environment["HELD_WAKE_POLLS"] ?? "") ?? 2_000
        var http = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2)
        http.connectionLimit = count * 2 + 256  // the held budget is the limit less an eighth
        let harness = try await ServiceHarness(configuration: http)
        defer { harness.application.stop() }
        let client = harness.client()
        let current = try await client.send("GET", "/v1/accounts/jack/tabs", headers: [("Accept-Encoding", "gzip")])
        let etag = try #require(current.header("ETag"))
        let request = "GET /v1/accounts/jack/tabs?wait=60 HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nIf-None-Match: \(etag)\r\n\r\n"
        let polls = try HeldConnections.start(port: harness.port, count: count, request: request, spreadSources: true)
        defer { polls.end() }
        #expect(try await polls.readLine(seconds: 60) == "sent")
        #expect(try await eventually(seconds: 30) { harness.service.publisher.waiters.held == count })
        polls.writeLine("go")

        let prober = Prober(port: harness.port)
        try await Task.sleep(for: .milliseconds(50))  // a few probes before the wake
        let put = try await client.send(
            "PUT", "/v1/accounts/jack/layout", headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", "*")]),
            body: document(["Home", "Woken"]))
        let putAnswered = now()
        #expect(put.status == 200)
        let outcome = try await HeldConnections.outcome(polls)
        try await Task.sleep(for: .milliseconds(50))
        let probes = prober.stop()
        #expect(outcome["200"] == count && outcome.statuses.count == 1, "\(outcome)")
        let lastAnswer = outcome.last

        // The probes asked during the wake (after the PUT's answer, before the last poll's).
        let during = probes.filter { $0.started >= putAnswered && $0.started < lastAnswer }
        let slowest = during.map { $0.took }.max() ?? 0
        print(
            "held-wake: \(count) woken in \(Int((lastAnswer - putAnswered) * 1000)) ms after the PUT's answer; /healthz during it: "
                + "\(during.count) probes, the slowest \(Int(slowest * 1000)) ms; paced resumes \(harness.server.pacedResumes)")
        // Several probes were answered while the wake went on: none waited for the whole of it.
        #expect(during.filter { $0.started + $0.took < lastAnswer }.count >= 2, "\(during.count) probes during the wake")
        // Generous: a loaded machine slows everything, but no probe waits seconds behind a wake.
        #expect(slowest < 2, "the slowest /healthz during the wake took \(slowest) s")
        #expect(harness.server.pacedResumes.resumed >= count)
    }
}
