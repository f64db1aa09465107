import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The tests' one socket client: a TCP connection on a raw socket, to send exactly the bytes a test wants (malformed
/// ones included) and read exactly what the server answers. Every read has a deadline. ``HTTPTestClient`` speaks
/// HTTP/1.1 over it. Safety (`@unchecked Sendable`): a test uses one connection from one task at a time (an abusive
/// client may write from one task while another reads: a socket is full duplex and `fd` never changes); the async
/// reads only move the blocking call to a thread of its own.
public final class RawConnection: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public let fd: Int32

    /// Connects to `host:port`, from `source` (port 0) when given: `127.0.0.2` is another client address.
    public init(port: UInt16, host: String = "127.0.0.1", source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw Failure(description: "bind \(source): errno \(errno)") }
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &remote.sin_addr)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect: errno \(errno)") }
    }

    /// Also when `init` threw after `fd` was set (Swift runs it then): closing it there too closed, a second time, a
    /// descriptor another thread may have been given meanwhile (once, a libmicrohttpd daemon's wake-up channel).
    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Sends every byte (MSG_NOSIGNAL: a server that closed early is an error here, not a SIGPIPE).
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends what the socket takes now and says how much (an abusive client does not care whether it all went).
    @discardableResult
    public func write(_ text: String) -> Int {
        Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends as much of `bytes` as the server reads, stopping quietly when it stops reading (it may answer 413 or
    /// 431 before it has read everything).
    public func sendTolerant(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Half-closes: the server sees the end of the request stream and may still answer.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads until the server closes the connection or `seconds` pass. `closed` says which.
    public func readUntilClosed(seconds: Double = 3) -> (bytes: [UInt8], closed: Bool) {
        var bytes: [UInt8] = []
        let deadline = now() + seconds
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline - now()
            guard left > 0, waitReadable(seconds: left) else { return (bytes, false) }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (bytes, true) }
            bytes.append(contentsOf: chunk[..<count])
        }
    }

    /// Reads one complete response (headers and a `Content-Length` body; none after a HEAD or for 1xx/204/304).
    public func readResponse(seconds: Double = 3, head: Bool = false) throws -> RawResponse {
        let deadline = now() + seconds
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let (response, used) = RawResponse.parse(buffered, head: head) {
                buffered.removeFirst(used)
                return response
            }
            let left = deadline - now()
            guard left > 0, waitReadable(seconds: left) else { throw Failure(description: "no complete response within \(seconds) s") }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { throw Failure(description: "closed before a complete response (\(buffered.count) bytes)") }
            buffered.append(contentsOf: chunk[..<count])
        }
    }

    private var buffered: [UInt8] = []

    /// ``readResponse(seconds:head:)`` on a thread of its own: the cooperative pool stays free for the server's
    /// deferred replies (it has one thread per core; tests blocking it would starve them).
    public func response(seconds: Double = 3, head: Bool = false) async throws -> RawResponse {
        try await offPool { try self.readResponse(seconds: seconds, head: head) }
    }

    /// ``readUntilClosed(seconds:)`` on a thread of its own.
    public func untilClosed(seconds: Double = 3) async -> (bytes: [UInt8], closed: Bool) {
        (try? await offPool { self.readUntilClosed(seconds: seconds) }) ?? ([], false)
    }

    /// Whether data (or the end) can be read within `seconds`.
    /// What arrives within `seconds` after the responses read so far (a HEAD or 304 body would show up here).
    public func leftover(seconds: Double) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 4096)
        if waitReadable(seconds: seconds) {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { buffered.append(contentsOf: chunk[..<count]) }
        }
        return buffered
    }

    /// Every byte the server sends until a header block has arrived and then `quiet` seconds pass with nothing more
    /// (or `seconds` in all): an answer exactly as sent, with whatever follows its header block. The bytes are
    /// consumed: the next read starts after them.
    public func readRawAnswer(seconds: Double = 3, quiet: Double = 0.15) async throws -> [UInt8] {
        try await offPool {
            let deadline = now() + seconds
            var bytes = self.leftover(seconds: 0)
            while now() < deadline, !bytes.containsHeaderEnd {
                bytes = self.leftover(seconds: 0.1)
            }
            var count = bytes.count
            while now() < deadline {
                bytes = self.leftover(seconds: quiet)
                if bytes.count == count { break }
                count = bytes.count
            }
            self.buffered.removeAll()
            return bytes
        }
    }

    public func waitReadable(seconds: Double) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, Int32(max(1, seconds * 1000))) > 0
    }
}

/// One response as read off the wire.
public struct RawResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A header's first value (names compare case-insensitively).
    public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    public var text: String { String(decoding: body, as: UTF8.self) }
    /// The body as a JSON object, nil when it is not one.
    public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }

    /// Parses the responses in `bytes`, in order (a trailing incomplete one is left out).
    public static func all(in bytes: [UInt8]) -> [RawResponse] {
        var rest = bytes[...]
        var responses: [RawResponse] = []
        while let (response, used) = parse(Array(rest), head: false) {
            responses.append(response)
            rest = rest.dropFirst(used)
        }
        return responses
    }

    /// A response at the start of `bytes` and how many bytes it took, or nil when incomplete.
    public static func parse(_ bytes: [UInt8], head: Bool) -> (RawResponse, Int)? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4, let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<$0 + 4]) == terminator }) else {
            return nil
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: " ")))
        }
        var response = RawResponse(status: status, headers: headers, body: [])
        let bodyStart = end + 4
        let length = (head || status < 200 || status == 204 || status == 304) ? 0 : Int(response.header("Content-Length") ?? "0") ?? 0
        guard bytes.count >= bodyStart + length else { return nil }
        response.body = Array(bytes[bodyStart..<bodyStart + length])
        return (response, bodyStart + length)
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }

    fileprivate func components(separatedBy separator: String) -> [String] {
        var parts: [String] = []
        var rest = self[...]
        while let range = rest.firstRange(of: separator) {
            parts.append(String(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        parts.append(String(rest))
        return parts
    }
}

/// Runs blocking work (socket reads, child processes) on a thread of its own and awaits its result, so that
/// tests never hold the cooperative pool the server's deferred replies run on.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Monotonic seconds.
public func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

extension [UInt8] {
    /// Whether the bytes hold a blank line (`CRLF CRLF`), the end of a header block.
    fileprivate var containsHeaderEnd: Bool {
        guard count >= 4 else { return false }
        for index in 0...(count - 4) where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return true
        }
        return false
    }
}
