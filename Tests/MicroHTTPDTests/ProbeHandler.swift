import Foundation
import MicroHTTPD
import Synchronization
import TabTestSupport
import Testing

/// A handler that answers with what it saw (`METHOD path body=N accept=<combined Accept>`, or under `/query` the
/// values of the query argument `q`), refuses paths under `/refuse` at admission, holds paths under `/defer`
/// until its gate opens, and under `/block` keeps its worker thread busy for 300 ms before answering.
final class ProbeHandler: HTTPHandler {
    let gate = Gate()
    /// Requests ``handle(_:)`` saw.
    let handled = Atomic<Int>(0)
    /// Requests ``admit(_:)`` saw.
    let admitted = Atomic<Int>(0)
    /// What ``serverWillStop()`` answers held requests with; nil leaves them held.
    let answerOnStop: HTTPResponse?

    init(answerOnStop: HTTPResponse? = nil) { self.answerOnStop = answerOnStop }

    func handle(_ request: borrowing HTTPRequest) -> HTTPReply {
        handled.add(1, ordering: .relaxed)
        if request.path.hasPrefix("/defer") {
            let gate = gate
            return .deferred { await gate.wait() }
        }
        if request.path.hasPrefix("/block") { usleep(300_000) }
        if request.path.hasPrefix("/query") {
            // Every value of `q` and the first, as the handler reads them.
            let text = "q=\(request.queryValues("q").joined(separator: "|")) first=\(request.query("q") ?? "nil")"
            return .response(HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")], body: Array(text.utf8)))
        }
        let accept = request.combinedHeader("Accept") ?? "-"
        var text = "\(request.method.token) \(request.path) body=\(request.body.count) accept=\(accept)"
        if let note = request.admission as? String { text += " admission=\(note)" }
        return .response(HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")], body: Array(text.utf8)))
    }

    func reject(_ violation: RequestLimitViolation) -> HTTPResponse {
        switch violation {
        case .headerBlockTooLarge: RequestRefusal.malformed("header block too large").defaultResponse.with(status: 431)
        case .bodyTooLarge: RequestRefusal.malformed("body too large").defaultResponse.with(status: 413)
        }
    }

    func admit(_ request: borrowing HTTPRequest) -> Admission {
        admitted.add(1, ordering: .relaxed)
        if request.path.hasPrefix("/refuse") {
            return .refuse(RequestRefusal.malformed("refused at admission").defaultResponse.with(status: 403))
        }
        if request.path.hasPrefix("/note") { return .proceedNoting("noted \(request.path)") }
        return .proceed
    }

    func serverWillStop() {
        if let answerOnStop { gate.open(with: answerOnStop) }
    }
}

extension HTTPResponse {
    func with(status: Int) -> HTTPResponse {
        var copy = self
        copy.status = status
        return copy
    }
}

/// Holds deferred replies until opened.
final class Gate: Sendable {
    private let state = Mutex<(waiting: [CheckedContinuation<HTTPResponse, Never>], answer: HTTPResponse?)>(([], nil))

    func wait() async -> HTTPResponse {
        await withCheckedContinuation { continuation in
            let answer = state.withLock { state in
                if state.answer == nil { state.waiting.append(continuation) }
                return state.answer
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Answers every held reply, and every later one, with `answer`.
    func open(with answer: HTTPResponse) {
        let waiting = state.withLock { state in
            state.answer = answer
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume(returning: answer) }
    }
}

/// A server on 127.0.0.1, a free port, with `configure` applied to a test configuration.
func startServer(
    _ handler: ProbeHandler = ProbeHandler(), configure: (inout HTTPServerConfiguration) -> Void = { _ in }
) throws -> (HTTPServer, ProbeHandler) {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2, stopGraceSeconds: 2)
    configure(&configuration)
    return (try HTTPServer(configuration: configuration, handler: handler), handler)
}

/// Opens `limit` connections to `server` that each send `prefix` and part of a request head, then stop: they hold
/// every slot of a server whose connection limit is `limit`. Returns once the server counts them all.
func holdEverySlot(of server: HTTPServer, limit: Int, after prefix: [UInt8] = []) async throws -> [RawConnection] {
    var holders: [RawConnection] = []
    for _ in 0..<limit {
        let holder = try RawConnection(port: server.port)
        try holder.send(prefix + Array("GET / HTTP/1.1\r\nHo".utf8))
        holders.append(holder)
    }
    #expect(try await eventually { server.openConnections == limit })
    return holders
}
