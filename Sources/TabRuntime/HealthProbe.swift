import Foundation
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// Why a health probe got no status.
public enum HealthProbeError: Error, CustomStringConvertible {
    case badAddress(String)
    case connect(String, errno: Int32)
    case timedOut(seconds: Double)
    case io(errno: Int32)
    case notHTTP(String)

    public var description: String {
        switch self {
        case .badAddress(let host): "'\(host)' is not an IPv4 or IPv6 address"
        case .connect(let target, let errno): "cannot connect to \(target): \(String(cString: strerror(errno)))"
        case .timedOut(let seconds): "no answer within \(seconds) s"
        case .io(let errno): "read or write failed: \(String(cString: strerror(errno)))"
        case .notHTTP(let line): "not an HTTP answer: \(line.prefix(80))"
        }
    }
}

/// A plain HTTP/1.1 GET over a socket with one deadline for connect, write and read.
public struct HealthProbe {
    /// A probe of `host`:`port` that gives up after `timeout` seconds by `clock`.
    public init(host: String, port: UInt16, timeout: Double, clock: TimeSource = .system) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.clock = clock
    }

    public var host: String
    public var port: UInt16
    public var timeout: Double
    /// What the deadline is measured on (its monotonic reading).
    public var clock: TimeSource

    /// The status code of `GET path`.
    /// - Throws: `HealthProbeError` when there is no connection, no answer before the deadline, or no status line.
    public func status(of path: String) throws(HealthProbeError) -> Int {
        let deadline = clock.seconds + timeout
        let socketFD = try connect(deadline: deadline)
        defer { close(socketFD) }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(bracketed):\(port)\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            try wait(socketFD, for: Int16(POLLOUT), until: deadline)
            let written = request[sent...].withUnsafeBytes { send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw .io(errno: errno) }
            sent += written
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !answer.contains(UInt8(ascii: "\n")) && answer.count < 8192 {
            try wait(socketFD, for: Int16(POLLIN), until: deadline)
            let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                if count == 0 { break }
                throw .io(errno: errno)
            }
            answer += buffer[..<count]
        }
        let statusLine = String(decoding: answer.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let fields = statusLine.split(separator: " ")
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/1."), let status = Int(fields[1]) else { throw .notHTTP(statusLine) }
        return status
    }

    /// Whether the port accepts a TCP connection before the deadline (for a TLS port, which this probe cannot speak).
    /// - Throws: `HealthProbeError` when it does not.
    public func accepts() throws(HealthProbeError) {
        close(try connect(deadline: clock.seconds + timeout))
    }

    private func connect(deadline: Double) throws(HealthProbeError) -> Int32 {
        let (storage, length, family): (sockaddr_storage, socklen_t, Int32)
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            (storage, length, family) = try socketAddress(address, family: AF_INET6, at: \.sin6_addr)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            (storage, length, family) = try socketAddress(address, family: AF_INET, at: \.sin_addr)
        }
        let socketFD = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else { throw .connect("\(host):\(port)", errno: errno) }
        let result = withUnsafePointer(to: storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socketFD, $0, length) }
        }
        do throws(HealthProbeError) {
            if result != 0 {
                guard errno == EINPROGRESS else { throw .connect("\(host):\(port)", errno: errno) }
                try wait(socketFD, for: Int16(POLLOUT), until: deadline)
                var error: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(socketFD, SOL_SOCKET, SO_ERROR, &error, &size)
                guard error == 0 else { throw .connect("\(host):\(port)", errno: error) }
            }
        } catch {
            close(socketFD)
            throw error
        }
        return socketFD
    }

    /// `address` (its family and port set) with ``host`` parsed into its field at `field`, as a `sockaddr_storage`, with
    /// its length and family.
    /// - Throws: `.badAddress` when ``host`` is not an address of `family`.
    private func socketAddress<Address, Field>(
        _ address: Address, family: Int32, at field: WritableKeyPath<Address, Field>
    ) throws(HealthProbeError) -> (sockaddr_storage, socklen_t, Int32) {
        var address = address
        guard withUnsafeMutablePointer(to: &address[keyPath: field], { inet_pton(family, host, $0) }) == 1 else { throw .badAddress(host) }
        var storage = sockaddr_storage()
        withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
        return (storage, socklen_t(MemoryLayout<Address>.size), family)
    }

    /// Polls until the socket is ready for `events` or the deadline (monotonic seconds) passes.
    private func wait(_ socketFD: Int32, for events: Int16, until deadline: Double) throws(HealthProbeError) {
        while true {
            let remaining = deadline - clock.seconds
            guard remaining > 0 else { throw .timedOut(seconds: timeout) }
            var descriptor = pollfd(fd: socketFD, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining * 1000, 60_000).rounded(.up)))
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw .io(errno: errno) }
        }
    }
}
