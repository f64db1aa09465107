import Foundation

@testable import TabClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tiny HTTP/1.1 server on a real socket (127.0.0.1, a free port) that answers from a script: for the
/// answers a correct tabserver never gives (500s, garbage, 503 with `Retry-After`) and for requests that are
/// never answered. One request per connection (`Connection: close`). Blocking I/O runs on its own threads.
final class RawHTTPResponder: @unchecked Sendable {
    // Safety: `listener` and `port` are set in init and only read after; the rest is behind `state`.

    /// What to do with the request numbered n (0-based).
    enum Reply: Sendable {
        case respond(status: Int, headers: [(String, String)] = [], body: Data = Data())
        /// Never answer; note when the client closes the connection.
        case hold
        /// Close the connection without answering.
        case drop
    }

    /// A request as it arrived.
    struct Received: Sendable {
        var head: String
        var at: ContinuousClock.Instant
        /// The body (`Content-Length` bytes), empty for none.
        var body = Data()
        var target: String { String(head.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") }
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                if line[..<colon].caseInsensitiveCompare(name) == .orderedSame {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    private struct State {
        var requests: [Received] = []
        var heldClosedAt: [ContinuousClock.Instant] = []
        var stopped = false
    }

    let port: UInt16
    private let listener: Int32
    private let script: @Sendable (Int, Received) -> Reply
    private let state = Locked(State())

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var requests: [Received] { state.withLock { $0.requests } }
    /// When the client closed each held connection.
    var heldClosedAt: [ContinuousClock.Instant] { state.withLock { $0.heldClosedAt } }

    /// Answers the request numbered n (0-based) with `script(n)`.
    convenience init(script: @escaping @Sendable (Int) -> Reply) throws {
        try self.init { index, _ in script(index) }
    }

    /// Answers each request with `script(n, request)`: by what the request says.
    init(answering script: @escaping @Sendable (Int, Received) -> Reply) throws {
        self.script = script
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket: errno \(errno)") }
        self.listener = listener
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(listener, pointer, length) == 0 && listen(listener, 64) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw TestFailure("bind/listen on 127.0.0.1: errno \(errno)")
        }
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { stop() }

    /// Stops accepting (connections already open finish on their own threads).
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        // Shut down only: the accept thread closes the descriptor when it leaves. Closing it here would let the
        // number be reused by another socket while that thread may still call accept on it.
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR && !state.withLock({ $0.stopped }) { continue }
                return
            }
            if state.withLock({ $0.stopped }) {
                close(connection)
                return
            }
            Thread { [self] in serve(connection) }.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let separator = Array("\r\n\r\n".utf8)
        func headEnd() -> Int? {
            guard bytes.count >= separator.count else { return nil }
            return (0...(bytes.count - separator.count)).first { Array(bytes[$0..<($0 + separator.count)]) == separator }
        }
        while headEnd() == nil {
            let n = recv(connection, &chunk, chunk.count, 0)
            guard n > 0 else { return }
            bytes += chunk[..<n]
        }
        let end = (headEnd() ?? bytes.count) + separator.count
        var received = Received(head: String(decoding: bytes[..<end], as: UTF8.self), at: .now)
        // A body (a POST's), read to its Content-Length.
        let length = received.header("Content-Length").flatMap { Int($0) } ?? 0
        var body = Array(bytes[end...])
        while body.count < length {
            let n = recv(connection, &chunk, chunk.count, 0)
            guard n > 0 else { break }
            body += chunk[..<n]
        }
        received.body = Data(body.prefix(length))
        let index = state.withLock { state -> Int in
            state.requests.append(received)
            return state.requests.count - 1
        }
        switch script(index, received) {
        case .respond(let status, let headers, let body):
            var head = "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Status")\r\nConnection: close\r\n"
            head += "Content-Length: \(body.count)\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            let response = Array((head + "\r\n").utf8) + Array(body)
            var sent = 0
            while sent < response.count {
                let n = response[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        case .drop:
            return
        case .hold:
            // Until the client closes (recv 0 or a reset); the receive timeout bounds the wait.
            while true {
                let n = recv(connection, &chunk, chunk.count, 0)
                if n > 0 { continue }
                if n == 0 || errno == ECONNRESET { state.withLock { $0.heldClosedAt.append(.now) } }
                return
            }
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

/// A port on 127.0.0.1 where connections are refused, for as long as this value lives: a socket bound to it that
/// does not listen (so no other socket can take the port meanwhile).
final class RefusingPort: Sendable {
    let port: UInt16
    private let descriptor: Int32

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw TestFailure("bind on 127.0.0.1: errno \(errno)")
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }
}
