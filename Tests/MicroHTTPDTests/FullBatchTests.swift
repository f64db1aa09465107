import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// libmicrohttpd drains its epoll set 128 events at a time and, when a turn's events were exactly 128, waited again
/// with its blocking timeout before serving the connections it had just found ready: a worker with 128 (or 256) busy
/// connections waited for a new event that their clients, waiting for answers, would never send. The process's
/// `epoll_wait` (CEpollBatch) ends that second wait at once.
@Suite(.serialized) struct FullBatchTests {
    static let request = "GET /probe HTTP/1.1\r\nHost: t\r\n\r\n"

    /// `count` kept-alive connections send a request each while the only worker is busy (a `/block` request), so the
    /// worker finds them all ready at once: 127 to 129 events, or 255 to 257.
    @Test(arguments: [127, 128, 255, 256])
    func aWorkerServesEveryConnectionItFindsReadyAtOnce(count: Int) async throws {
        HTTPServerConfiguration.raiseOpenFileLimit()
        let (server, handler) = try startServer {
            $0.threads = 1; $0.perIPConnectionLimit = 0
        }
        defer { server.stop() }
        var connections: [RawConnection] = []
        for _ in 0..<count {
            let connection = try RawConnection(port: server.port)
            try connection.send(Self.request)
            _ = try connection.readResponse(seconds: 5)
            connections.append(connection)
        }
        let blocker = try RawConnection(port: server.port)
        try blocker.send("GET /block HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try await eventually { handler.handled.load(ordering: .relaxed) == count + 1 })
        for connection in connections { try connection.send(Self.request) }
        _ = try blocker.readResponse(seconds: 5)
        var answered = 0
        for connection in connections where (try? connection.readResponse(seconds: 3))?.status == 200 { answered += 1 }
        #expect(answered == count, "\(answered) of \(count) answered")
    }
}
