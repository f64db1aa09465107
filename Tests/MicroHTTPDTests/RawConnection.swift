import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP connection on a raw socket, to send exactly the bytes a test wants (malformed ones included) and read
/// exactly what the server answers. Every read has a deadline. Safety (`@unchecked Sendable`): a test uses one
/// connection from one task at a time; the async reads only move the blocking call to a thread of its own.
final class RawConnection: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let fd: Int32

    /// Connects to `host:port`, from `source` (port 0) when given: `127.0.0.2` is another client address.
    init(port: UInt16, host: String = "127.0.0.1", source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(fd)
                throw Failure(description: "bind \(source): errno \(errno)")
            }
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &remote.sin_addr)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(fd)
            throw Failure(description: "connect: errno \(error)")
        }
    }

    deinit { Glibc.close(fd) }

    /// Sends every byte (MSG_NOSIGNAL: a server that closed early is an error here, not a SIGPIPE).
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads until the server closes the connection or `seconds` pass. `closed` says which.
    func readUntilClosed(seconds: Double = 3) -> (bytes: [UInt8], closed: Bool) {
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
    func readResponse(seconds: Double = 3, head: Bool = false) throws -> RawResponse {
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
    func response(seconds: Double = 3, head: Bool = false) async throws -> RawResponse {
        try await offPool { try self.readResponse(seconds: seconds, head: head) }
    }

    /// ``readUntilClosed(seconds:)`` on a thread of its own.
    func untilClosed(seconds: Double = 3) async -> (bytes: [UInt8], closed: Bool) {
        (try? await offPool { self.readUntilClosed(seconds: seconds) }) ?? ([], false)
    }

    /// Whether data (or the end) can be read within `seconds`.
    func waitReadable(seconds: Double) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, Int32(max(1, seconds * 1000))) > 0
    }
}

/// One response as read off the wire.
struct RawResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    var text: String { String(decoding: body, as: UTF8.self) }

    /// Parses the responses in `bytes`, in order (a trailing incomplete one is left out).
    static func all(in bytes: [UInt8]) -> [RawResponse] {
        var rest = bytes[...]
        var responses: [RawResponse] = []
        while let (response, used) = parse(Array(rest), head: false) {
            responses.append(response)
            rest = rest.dropFirst(used)
        }
        return responses
    }

    /// A response at the start of `bytes` and how many bytes it took, or nil when incomplete.
    static func parse(_ bytes: [UInt8], head: Bool) -> (RawResponse, Int)? {
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
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Monotonic seconds.
func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
