import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

/// Deferred (suspended) connections by the thousand, as long-polls hold them: all are accepted (connection limit
/// split over the worker threads, open-file limit), held without a thread each, and all answered when released.
/// 2,000 by default (the server side shares this test process's open-file limit with every other suite);
/// `MHD_SCALE_CONNECTIONS=10000 swift test --filter SuspendedScaleTests` runs the 10,000 of the brief alone.
@Suite struct SuspendedScaleTests {
    /// This process's resident memory in KiB (`VmRSS`).
    static func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func thousandsOfSuspendedConnectionsAreHeldAndAnswered() async throws {
        let count = Int(ProcessInfo.processInfo.environment["MHD_SCALE_CONNECTIONS"] ?? "") ?? 2_000
        let handler = ProbeHandler()
        let (server, _) = try startServer(handler) {
            $0.connectionLimit = count  // exactly: proves the per-worker split refuses none of them
            $0.perIPConnectionLimit = 0  // every client is 127.0.0.1 here
            $0.stopGraceSeconds = 5
        }
        defer { server.stop() }
        let clients = try HeldConnections.start(port: server.port, count: count, request: "GET /defer HTTP/1.1\r\nHost: x\r\n\r\n")
        defer { clients.end() }
        let before = Self.residentKiB()
        let started = now()
        #expect(try await clients.readLine(seconds: 60) == "sent")
        let held = try await eventually(seconds: 30) { server.suspendedConnections == count }
        let heldAfter = now() - started
        #expect(held, "\(server.suspendedConnections) of \(count) suspended")
        let during = Self.residentKiB()
        let open = server.openConnections
        handler.gate.open(with: HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")], body: Array("ok".utf8)))
        let released = now()
        clients.writeLine("go")
        let outcome = try await HeldConnections.outcome(clients, seconds: 40)
        let answeredAfter = now() - released
        #expect(outcome["200"] == count, "\(outcome)")
        print(
            "suspended-scale: \(count) connections (\(open) open in the server, open-file limit \(Self.openFileLimit)), "
                + "all suspended \(heldAfter) s after the first connect, all answered \(answeredAfter) s after release; "
                + "server RSS \(before / 1024) MiB before, \(during / 1024) MiB while held "
                + "(\((during - before) * 1024 / max(count, 1)) bytes per held connection)")
    }

    static var openFileLimit: Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }
}
