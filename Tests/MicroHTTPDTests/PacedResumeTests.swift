import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

/// Deferred replies answered with a paced answer (the long-polls one change wakes) over sockets: resumed a slice at
/// a time by the server's resumer thread, every one answered, and a stop answers those still queued.
@Suite struct PacedResumeTests {
    static func pacedOK() -> HTTPResponse {
        var response = HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")], body: Array("ok".utf8))
        response.resumption = .paced
        return response
    }

    @Test func pacedAnswersByTheThousandAreAllSentASliceAtATime() async throws {
        let count = 2_000
        let (server, handler) = try startServer {
            $0.connectionLimit = count + 64
            $0.perIPConnectionLimit = 0  // every client is 127.0.0.1 here
            $0.resumeSlice = 32
            $0.resumePatienceSeconds = 30  // never early: the bound below holds on a loaded machine
            $0.stopGraceSeconds = 5
        }
        defer { server.stop() }
        let clients = try LineProcess(
            "/usr/bin/python3", ["-c", SuspendedScaleTests.clientScript, String(server.port), String(count)])
        defer { clients.end() }
        #expect(try await clients.readLine(seconds: 60) == "sent")
        #expect(try await eventually(seconds: 30) { server.suspendedConnections == count })
        handler.gate.open(with: Self.pacedOK())
        clients.writeLine("go")
        #expect(try await clients.readLine(seconds: 60) == "answered \(count)")
        // The resumer counts a slice once it is resumed, a moment after its connections may have been answered.
        #expect(try await eventually(seconds: 10) { server.pacedResumes.resumed == count })
        let paced = server.pacedResumes
        #expect(paced.resumed == count, "\(paced)")
        #expect(paced.mostOutstanding <= 32 && paced.largestSlice == 32, "\(paced)")
        #expect(paced.slices >= count / 32, "\(paced)")
        #expect(paced.impatient == 0 && paced.unpaced == 0, "\(paced)")
        #expect(server.suspendedConnections == 0 && server.pacedResumesQueued == 0)
    }

    /// Reads every connection until the server closes it and prints "statuses 200:A 503:B none:C".
    static let stopScript = """
        import selectors, socket, sys, time
        port, n = int(sys.argv[1]), int(sys.argv[2])
        socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /defer HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
            socks.append(s)
        print("sent", flush=True)
        selector = selectors.DefaultSelector()
        received = {}
        for s in socks:
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ)
            received[s] = b""
        open_count, deadline = n, time.time() + 30
        while open_count and time.time() < deadline:
            for key, _ in selector.select(timeout=1):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except ConnectionResetError:
                    data = b""
                received[s] += data
                if not data:
                    open_count -= 1
                    selector.unregister(s)
        counts = {}
        for data in received.values():
            status = data[9:12].decode() if data.startswith(b"HTTP/1.1 ") else "none"
            counts[status] = counts.get(status, 0) + 1
        print("statuses", " ".join(f"{k}:{v}" for k, v in sorted(counts.items())), flush=True)
        """

    @Test func aStopAnswersEveryDeferredReplyWhetherQueuedForItsSliceOrStillRunning() async throws {
        let count = 300
        let (server, handler) = try startServer {
            $0.connectionLimit = count + 64
            $0.perIPConnectionLimit = 0
            $0.resumeSlice = 1  // one at a time: answers are still queued when the stop comes
            $0.resumePatienceSeconds = 30
            $0.stopGraceSeconds = 0
        }
        defer { server.stop() }
        let clients = try LineProcess("/usr/bin/python3", ["-c", Self.stopScript, String(server.port), String(count)])
        defer { clients.end() }
        #expect(try await clients.readLine(seconds: 60) == "sent")
        #expect(try await eventually(seconds: 30) { server.suspendedConnections == count })
        handler.gate.open(with: Self.pacedOK())
        try await offPool { server.stop() }
        let line = try await clients.readLine(seconds: 60)
        let statuses = Dictionary(
            uniqueKeysWithValues: line.split(separator: " ").dropFirst().map { part in
                let pair = part.split(separator: ":")
                return (String(pair[0]), Int(pair[1]) ?? -1)
            })
        print("paced-stop: \(count) held, answered \(line)")
        // Every one answered: its own 200 (resumed by the resumer or by the stop), or 503 if its work had not ended.
        #expect(statuses["none"] == nil, "\(line)")
        #expect((statuses["200"] ?? 0) + (statuses["503"] ?? 0) == count, "\(line)")
        #expect(server.suspendedConnections == 0)
    }
}
