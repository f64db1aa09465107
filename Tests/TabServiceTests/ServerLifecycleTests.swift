import Foundation
import MicroHTTPD
import TabTestSupport
import Testing

/// A handler whose answers wait: to prove that a stop finishes requests in flight.
struct SlowHandler: HTTPHandler {
    let delay: Duration

    func handle(_ request: borrowing HTTPRequest) -> HTTPReply {
        let delay = self.delay
        return .deferred {
            try? await Task.sleep(for: delay)
            return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")], body: Array("done".utf8))
        }
    }

    func reject(_ violation: RequestLimitViolation) -> HTTPResponse { HTTPResponse(status: 400) }
}

@Suite struct ServerLifecycleTests {
    @Test func stopFinishesRequestsInFlightAndRefusesNewConnections() async throws {
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), handler: SlowHandler(delay: .milliseconds(400)))
        let port = server.port
        async let answer = HTTPTestClient(port: port).send("GET", "/slow")
        for _ in 0..<500 where server.requestsInFlight == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.requestsInFlight == 1)
        await withCheckedContinuation { continuation in
            Thread {
                server.stop()
                continuation.resume()
            }.start()
        }
        let response = try await answer
        #expect(response.status == 200 && response.text == "done")
        await #expect(throws: HTTPTestClient.Failure.self) { try await HTTPTestClient(port: port).send("GET", "/after") }
    }

    @Test func refusesAnAddressThatIsNotAnIP() {
        #expect(throws: MicroHTTPDError.invalidHost("localhost")) {
            try HTTPServer(configuration: HTTPServerConfiguration(host: "localhost", port: 0), handler: SlowHandler(delay: .zero))
        }
    }

    @Test func refusesAPortInUse() throws {
        let first = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0), handler: SlowHandler(delay: .zero))
        #expect(throws: MicroHTTPDError.self) {
            try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: first.port), handler: SlowHandler(delay: .zero))
        }
    }
}
