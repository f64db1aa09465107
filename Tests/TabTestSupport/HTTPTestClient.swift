import Foundation

/// An HTTP/1.1 client over ``RawConnection``: enough to test the server byte for byte (keep-alive, HEAD and 304
/// without bodies, raw requests) without a test-only dependency. Blocking reads run on a thread of their own so the
/// cooperative pool stays free for the server's deferred work; every read has a deadline (10 s).
public final class HTTPTestClient: @unchecked Sendable {
    // Safety: one request at a time per client (tests await each call); `connection` is only touched inside it.
    public typealias Response = RawResponse
    public typealias Failure = RawConnection.Failure

    public let port: UInt16
    private var connection: RawConnection?

    public init(port: UInt16) { self.port = port }

    /// Sends one request and reads its response; the connection is kept for the next call.
    public func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) async throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["PUT", "POST", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return try await raw(Array(head.utf8) + body, method: method)
    }

    /// Sends bytes as they are and reads one response.
    public func raw(_ bytes: [UInt8], method: String = "GET") async throws -> Response {
        try await offPool {
            do {
                let connection = try self.connection ?? RawConnection(port: self.port)
                self.connection = connection
                connection.sendTolerant(bytes)
                let response = try connection.readResponse(seconds: 10, head: method == "HEAD")
                // A refusal decided before the body (405, 401, 413 …) closes the connection: the next call reconnects.
                if response.header("Connection")?.lowercased() == "close" { self.connection = nil }
                return response
            } catch {
                self.connection = nil
                throw error
            }
        }
    }

    /// Bytes the server sent beyond the last response (a HEAD or 304 body would show up here).
    public func leftoverAfter(milliseconds: Int) async -> [UInt8] {
        (try? await offPool { self.connection?.leftover(seconds: Double(milliseconds) / 1000) ?? [] }) ?? []
    }
}
