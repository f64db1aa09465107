import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

/// Deferred replies answered with a paced answer (the long-polls one change wakes) over sockets: resumed a slice at
/// a time by the server's resumer thread, every one answered, and a stop answers those still queued.
@Suite struct PacedResumeTests {
    /// What each held connection asks.
    static let request = "GET /defer HTTP/1.1\r\nHost: x\r\n\r\n"

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
        let clients = try HeldConnections.start(port: server.port, count: count, request: Self.request)
        defer { clients.end() }
        #expect(try await clients.readLine(seconds: 60) == "sent")
        #expect(try await eventually(seconds: 30) { server.suspendedConnections == count })
        handler.gate.open(with: Self.pacedOK())
        clients.writeLine("go")
        #expect(try await HeldConnections.outcome(clients)["200"] == count)
        // The resumer counts a slice once it is resumed, a moment after its connections may have been answered.
        #expect(try await eventually(seconds: 10) { server.pacedResumes.resumed == count })
        let paced = server.pacedResumes
        #expect(paced.resumed == count, "\(paced)")
        #expect(paced.mostOutstanding <= 32 && paced.largestSlice == 32, "\(paced)")
        #expect(paced.slices >= count / 32, "\(paced)")
        #expect(paced.impatient == 0 && paced.unpaced == 0, "\(paced)")
        #expect(server.suspendedConnections == 0 && server.pacedResumesQueued == 0)
    }

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
        let clients = try HeldConnections.start(port: server.port, count: count, request: Self.request, holdUntilGo: false)
        defer { clients.end() }
        #expect(try await clients.readLine(seconds: 60) == "sent")
        #expect(try await eventually(seconds: 30) { server.suspendedConnections == count })
        handler.gate.open(with: Self.pacedOK())
        try await offPool { server.stop() }
        let outcome = try await HeldConnections.outcome(clients)
        print("paced-stop: \(count) held, answered \(outcome)")
        // Every one answered: its own 200 (resumed by the resumer or by the stop), or 503 if its work had not ended.
        #expect(outcome["none"] == 0 && outcome["partial"] == 0, "\(outcome)")
        #expect(outcome["200"] + outcome["503"] == count, "\(outcome)")
        #expect(server.suspendedConnections == 0)
    }
}
