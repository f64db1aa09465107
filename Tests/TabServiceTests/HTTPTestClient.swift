import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 client over a real socket: enough to test the server byte for byte (keep-alive,
/// HEAD and 304 without bodies, raw requests), without a test-only dependency. Blocking I/O runs on
/// its own thread so the cooperative pool stays free for the server's deferred work.
final class HTTPTestClient: @unchecked Sendable {
    // Safety: one request at a time per client (tests await each call); `fd` is only touched inside it.
    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let port: UInt16
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []

    init(port: UInt16) { self.port = port }

    deinit { if fd >= 0 { close(fd) } }

    private func connectIfNeeded() throws {
        guard fd < 0 else { return }
        fd = try connectLoopback(port: port)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        buffer = []
    }

    /// Sends one request and reads its response; the connection is kept for the next call.
    func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) async throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["PUT", "POST", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return try await raw(Array(head.utf8) + body, method: method)
    }

    /// Sends bytes as they are and reads one response.
    func raw(_ bytes: [UInt8], method: String = "GET") async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                do {
                    try self.connectIfNeeded()
                    try self.writeAll(bytes)
                    let response = try self.readResponse(method: method)
                    // A refusal decided before the body (405, 401, 413 …) closes the connection: the next call reconnects.
                    if response.header("Connection")?.lowercased() == "close" {
                        close(self.fd)
                        self.fd = -1
                    }
                    continuation.resume(returning: response)
                } catch {
                    if self.fd >= 0 {
                        close(self.fd)
                        self.fd = -1
                    }
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }  // the server may answer (413, 431) before reading everything
            sent += n
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { throw Failure(description: "connection closed or timed out (\(n), errno \(errno))") }
        buffer += chunk[..<n]
    }

    private func readResponse(method: String) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            if let range = buffer.firstRange(of: separator) { end = range.lowerBound } else { try fill() }
        }
        let headText = String(decoding: buffer[..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "bad status line in \(headText)") }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = Response(status: status, headers: headers, body: [])
        if method == "HEAD" || status == 304 || status == 204 { return response }
        let length = Int(response.header("Content-Length") ?? "0") ?? 0
        while buffer.count < length { try fill() }
        response.body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return response
    }

    /// Bytes the server sent beyond the last response (a HEAD or 304 body would show up here).
    func leftoverAfter(milliseconds: Int) async -> [UInt8] {
        await withCheckedContinuation { continuation in
            Thread {
                var timeout = timeval(tv_sec: 0, tv_usec: Int(milliseconds) * 1000)
                setsockopt(self.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = recv(self.fd, &chunk, chunk.count, 0)
                if n > 0 { self.buffer += chunk[..<n] }
                continuation.resume(returning: self.buffer)
            }.start()
        }
    }
}

/// A TCP socket connected to 127.0.0.1:`port`.
func connectLoopback(port: UInt16) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        close(fd)
        throw HTTPTestClient.Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(errno)")
    }
    return fd
}
