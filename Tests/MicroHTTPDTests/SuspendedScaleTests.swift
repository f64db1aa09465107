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

    /// The clients, in a process of their own (its own open-file limit): opens N connections, each sending a
    /// request the handler holds, prints "sent", waits for a line on standard input, then reads every answer
    /// (30 s deadline) and prints "answered K".
    static let clientScript = """
        import selectors, socket, sys, time
        port, n = int(sys.argv[1]), int(sys.argv[2])
        socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /defer HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            socks.append(s)
        print("sent", flush=True)
        sys.stdin.readline()
        selector = selectors.DefaultSelector()
        received = {}
        for s in socks:
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ)
            received[s] = b""
        answered, open_count, deadline = 0, n, time.time() + 30
        while open_count and time.time() < deadline:
            for key, _ in selector.select(timeout=1):
                s = key.fileobj
                data = s.recv(65536)
                received[s] += data
                whole = received[s].startswith(b"HTTP/1.1 200") and received[s].endswith(b"\\r\\n\\r\\nok")
                if whole or not data:
                    answered += 1 if whole else 0
                    open_count -= 1
                    selector.unregister(s)
        print("answered", answered, flush=True)
        """

    @Test func thousandsOfSuspendedConnectionsAreHeldAndAnswered() async throws {
        let count = Int(ProcessInfo.processInfo.environment["MHD_SCALE_CONNECTIONS"] ?? "") ?? 2_000
        let handler = ProbeHandler()
        let (server, _) = try startServer(handler) {
            $0.connectionLimit = count  // exactly: proves the per-worker split refuses none of them
            $0.perIPConnectionLimit = 0  // every client is 127.0.0.1 here
            $0.stopGraceSeconds = 5
        }
        defer { server.stop() }
        let clients = try LineProcess("/usr/bin/python3", ["-c", Self.clientScript, String(server.port), String(count)])
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
        let answer = try await clients.readLine(seconds: 40)
        let answeredAfter = now() - released
        #expect(answer == "answered \(count)")
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
