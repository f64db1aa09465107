import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a connection's PROXY protocol header from its socket, exactly: the bytes behind it (the client's request)
/// stay in the socket for libmicrohttpd. Bytes are peeked (`MSG_PEEK`) and only those that belong to the header are
/// taken, so nothing is read past it. Every wait has a deadline (`poll(2)`), and the reader never holds more than
/// ``ProxyHeader/maxBytes``.
public enum ProxyHeaderReader {
    /// Reads the header at the beginning of `socket` (a connected, blocking or non-blocking stream socket).
    /// - Parameters:
    ///   - socket: the connection's descriptor; it is neither closed nor otherwise changed.
    ///   - seconds: how long the whole header may take to arrive.
    ///   - clock: the clock the deadline is measured on.
    /// - Throws: ``ProxyHeaderError`` when the bytes are not a header, the peer closes or fails first
    ///   (``ProxyHeaderError/closed``), or the deadline passes (``ProxyHeaderError/timedOut``).
    public static func read(socket: Int32, within seconds: Double, clock: TimeSource = .system) throws(ProxyHeaderError)
        -> ProxyHeader
    {
        let deadline = clock.seconds + seconds
        var taken: [UInt8] = []
        var peeked = [UInt8](repeating: 0, count: ProxyHeader.maxBytes)
        while true {
            let left = deadline - clock.seconds
            guard left > 0 else { throw .timedOut }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(left * 1000, Double(Int32.max)).rounded(.up)))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else {
                if ready == 0 { throw .timedOut }
                throw .closed
            }
            let room = ProxyHeader.maxBytes - taken.count
            let count = peeked.withUnsafeMutableBytes { recv(socket, $0.baseAddress, room, Int32(MSG_PEEK | MSG_DONTWAIT)) }
            if count < 0, errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
            guard count > 0 else { throw .closed }
            switch try ProxyHeader.parse(taken + peeked.prefix(count)) {
            case .complete(let header, let length):
                try take(length - taken.count, from: socket, into: &taken)
                return header
            case .needMore:
                // No header ends within the peeked bytes, so all of them are the header's.
                try take(count, from: socket, into: &taken)
            }
        }
    }

    /// Takes `count` bytes already in the socket's receive buffer (seen with `MSG_PEEK`).
    private static func take(_ count: Int, from socket: Int32, into taken: inout [UInt8]) throws(ProxyHeaderError) {
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress.map { $0 + done }, count - done, Int32(MSG_DONTWAIT)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw .closed }
            done += got
        }
        taken += buffer
    }
}
