internal import CMicroHTTPD
import Synchronization
import TabTime

#if canImport(Glibc)
    import Glibc
#endif

/// The listening socket of a server whose connections begin with a PROXY protocol header, and the threads that
/// accept on it: each waits while the daemon is at its connection limit (the connection waits in the kernel's
/// backlog, as with libmicrohttpd's own listener), accepts a connection, closes it unless its peer is trusted, reads
/// its header (within the deadline, leaving the request behind it in the socket) and hands it to libmicrohttpd with
/// the client's address the header names. The kernel gives each connection to one waiting thread, so a peer that stalls
/// holds one thread only. libmicrohttpd's daemon runs without a listening socket of its own.
final class ProxyProtocolListener: Sendable {
    /// The port bound (the one the kernel picked when asked for 0).
    let port: UInt16
    private let socket: Int32
    private let settings: ProxyProtocolSettings
    private let clock: TimeSource
    private let threads = Mutex<[pthread_t]>([])
    /// The connection whose header each thread reads right now (-1: none); ``stop()`` shuts them down, so no
    /// stop waits out a header deadline. `stopping` is set under the same lock.
    private let reading: Mutex<(sockets: [Int32], stopping: Bool)>

    /// Binds and listens on `host:port` (`SO_REUSEADDR`, a backlog of 1024; an IPv6 host listens on IPv6 only, as
    /// libmicrohttpd's own socket does). No connection is accepted before ``start(handoff:)``.
    init(host: String, port: UInt16, settings: ProxyProtocolSettings, clock: TimeSource) throws(MicroHTTPDError) {
        let socket = try withSocketAddress(host, port) { address, length, isIPv6 -> Int32 in
            let socket = Glibc.socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else { return -1 }
            var on: Int32 = 1
            setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            if isIPv6 { setsockopt(socket, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size)) }
            guard bind(socket, address, length) == 0, listen(socket, 1024) == 0 else {
                close(socket)
                return -1
            }
            return socket
        }
        guard socket >= 0 else { throw .startFailed(host: host, port: port) }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        self.port = withUnsafeBytes(of: bound) { raw in
            // sin_port and sin6_port lie at the same offset, in network order.
            UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, as: UInt16.self))
        }
        self.socket = socket
        self.settings = settings
        self.clock = clock
        self.reading = Mutex(([Int32](repeating: -1, count: settings.threads), false))
    }

    /// Starts the accepting threads; each connection with a whole header goes to `handoff` (which owns the socket
    /// from then on) with the address libmicrohttpd is to see as the client's. While `admits` is false (the daemon is
    /// at its connection limit) no connection is accepted, and one accepted meanwhile is not handed off: it is asked
    /// again every millisecond until it is true or the listener stops.
    /// - Returns: false when no thread could be started.
    func start(admits: @escaping @Sendable () -> Bool, handoff: @escaping @Sendable (Int32, ClientSocketAddress) -> Void) -> Bool {
        var started: [pthread_t] = []
        for index in 0..<settings.threads {
            let thread = AcceptThread(listener: self, index: index, admits: admits, handoff: handoff)
            let context = Unmanaged.passRetained(thread).toOpaque()
            var handle = pthread_t()
            if pthread_create(&handle, nil, acceptThreadMain, context) == 0 {
                started.append(handle)
            } else {
                Unmanaged<AcceptThread>.fromOpaque(context).release()  // pairs with passRetained: the thread never ran
            }
        }
        threads.withLock { $0 = started }
        return !started.isEmpty
    }

    /// Stops accepting: shuts the listening socket and every header being read down, joins the threads, and
    /// closes the socket. Connections already handed off are libmicrohttpd's. Safe to call more than once.
    func stop() {
        let stopping = reading.withLock { state in
            defer { state.stopping = true }
            if !state.stopping { for socket in state.sockets where socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) } }
            return !state.stopping
        }
        guard stopping else { return }
        // Wakes every thread blocked in accept(2) (it fails with EINVAL from now on).
        shutdown(socket, Int32(SHUT_RDWR))
        for handle in threads.withLock({ $0 }) { pthread_join(handle, nil) }
        close(socket)
    }

    /// One thread's loop: wait for room, accept, check the peer, read the header, hand off; until ``stop()``.
    fileprivate func serve(thread index: Int, admits: @Sendable () -> Bool, handoff: @Sendable (Int32, ClientSocketAddress) -> Void) {
        cmhd_name_current_thread("proxy-accept")
        while true {
            guard waitForRoom(admits) else { return }
            var peer = ClientSocketAddress()
            let connection = withUnsafeMutablePointer(to: &peer.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(socket, $0, &peer.length) }
            }
            guard connection >= 0 else {
                if reading.withLock({ $0.stopping }) { return }
                switch errno {
                case EINTR, ECONNABORTED, EAGAIN, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: usleep(10_000)  // out of descriptors or memory: wait for some
                default: return
                }
                continue
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)  // as libmicrohttpd's own accepted sockets (accept4 is not imported)
            guard let peerAddress = peer.addressBytes, settings.trusts(peerAddress) else {
                close(connection)
                continue
            }
            let registered = reading.withLock { state in
                guard !state.stopping else { return false }
                state.sockets[index] = connection
                return true
            }
            guard registered else {
                close(connection)
                return
            }
            let header = try? ProxyHeaderReader.read(socket: connection, within: settings.headerDeadlineSeconds, clock: clock)
            reading.withLock { $0.sockets[index] = -1 }
            guard let header else {
                close(connection)
                continue
            }
            guard waitForRoom(admits) else {
                close(connection)
                return
            }
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            switch header {
            case .proxied(let source, _): handoff(connection, ClientSocketAddress(source))
            case .local: handoff(connection, peer)
            }
        }
    }
}

extension ProxyProtocolListener {
    /// Waits while `admits` is false (at the connection limit: the next connection waits in the backlog, or an
    /// accepted one in its socket); false when the listener stops meanwhile.
    fileprivate func waitForRoom(_ admits: @Sendable () -> Bool) -> Bool {
        while !admits() {
            if reading.withLock({ $0.stopping }) { return false }
            usleep(1_000)
        }
        return true
    }
}

/// A socket address as libmicrohttpd and the socket calls take it (`struct sockaddr *` and its length): a client's, or the
/// one a server binds.
struct ClientSocketAddress: @unchecked Sendable {
    // Safety (`@unchecked Sendable`): a plain C value with no pointers.
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)

    init() {}

    /// The source address a PROXY header names.
    init(_ address: ProxiedAddress) {
        self.init(isIPv6: address.family == .inet6, address: address.bytes, port: address.port)
    }

    /// An IPv4 (the first 4 of `address`, network order) or IPv6 (the first 16) address and `port`: the one place a
    /// `sockaddr_in` or `sockaddr_in6` is filled in, for a PROXY header's source and for the address a server binds.
    init(isIPv6: Bool, address: some Collection<UInt8>, port: UInt16) {
        let layout =
            isIPv6
            ? (
                family: AF_INET6, size: MemoryLayout<sockaddr_in6>.size, familyAt: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_family)!,
                portAt: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_port)!, addressAt: MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!,
                addressSize: 16
            )
            : (
                family: AF_INET, size: MemoryLayout<sockaddr_in>.size, familyAt: MemoryLayout<sockaddr_in>.offset(of: \.sin_family)!,
                portAt: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, addressAt: MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!,
                addressSize: 4
            )
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.storeBytes(of: sa_family_t(layout.family), toByteOffset: layout.familyAt, as: sa_family_t.self)
            raw.storeBytes(of: port.bigEndian, toByteOffset: layout.portAt, as: UInt16.self)
            UnsafeMutableRawBufferPointer(rebasing: raw[layout.addressAt...]).copyBytes(from: address.prefix(layout.addressSize))
        }
        length = socklen_t(layout.size)
    }

    /// The address in network order (4 bytes for IPv4, 16 for IPv6), nil for another family.
    var addressBytes: [UInt8]? {
        withUnsafeBytes(of: storage) { raw in
            switch Int32(storage.ss_family) {
            case AF_INET: Array(raw[MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!...].prefix(4))
            case AF_INET6: Array(raw[MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!...].prefix(16))
            default: nil
            }
        }
    }

    /// Calls `body` with the address as a `struct sockaddr *`.
    func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) } }
    }
}

/// An accepting thread's context (`pthread_create` takes one pointer).
private final class AcceptThread: Sendable {
    let listener: ProxyProtocolListener
    let index: Int
    let admits: @Sendable () -> Bool
    let handoff: @Sendable (Int32, ClientSocketAddress) -> Void

    init(
        listener: ProxyProtocolListener, index: Int, admits: @escaping @Sendable () -> Bool,
        handoff: @escaping @Sendable (Int32, ClientSocketAddress) -> Void
    ) {
        self.listener = listener
        self.index = index
        self.admits = admits
        self.handoff = handoff
    }
}

private let acceptThreadMain: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { context in
    guard let context else { return nil }
    // Pairs with the passRetained in `start(handoff:)`.
    let thread = Unmanaged<AcceptThread>.fromOpaque(context).takeRetainedValue()
    thread.listener.serve(thread: thread.index, admits: thread.admits, handoff: thread.handoff)
    return nil
}
