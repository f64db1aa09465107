import TabTime

/// How the HTTP server listens and what it allows a client. Defaults are the limits of docs/operations.md, "HTTP limits".
public struct HTTPServerConfiguration: Sendable {
    /// An IPv4 or IPv6 address literal.
    public var host: String
    /// 0 picks a free port (read it back from ``HTTPServer/port``).
    public var port: UInt16
    /// libmicrohttpd worker threads, each with its own epoll set (at least 1 runs: see ``workerThreads``).
    public var threads: Int
    /// Connections held open at once (libmicrohttpd's default of 1020 is too low for idle mobile clients).
    /// The server lowers it to what the process's open-file limit allows (see ``effectiveConnectionLimit``);
    /// ``derivedConnectionLimit(openFiles:memoryBytes:)`` is what `serve` uses when no limit is given.
    public var connectionLimit: Int
    /// Connections from one IP address at once; 0 for no limit. Behind a proxy every client shares the proxy's
    /// address: raise it (or set 0) there.
    public var perIPConnectionLimit: Int
    /// Seconds a connection may stay idle before it is closed.
    public var connectionTimeoutSeconds: Int
    /// The request line and header fields together, in bytes.
    public var maxHeaderBytes: Int
    /// The request body, in bytes.
    public var maxBodyBytes: Int
    /// How long a stop waits for requests in flight before it closes what is left, in seconds.
    public var stopGraceSeconds: Double
    /// A header block must be complete within this many seconds of the connection opening or of the previous
    /// answer (slow clients are cut off; an idle kept-alive connection is closed then too).
    public var headerDeadlineSeconds: Double
    /// A body must be complete within this many seconds of its headers.
    public var bodyDeadlineSeconds: Double
    /// Over HTTPS, the TLS handshake and the first request line must arrive within this many seconds of the
    /// connection opening (shorter than ``headerDeadlineSeconds``: a stalled handshake is cut off sooner).
    public var tlsHandshakeDeadlineSeconds: Double = 10
    /// The request target (path and query as sent) alone, in bytes: longer is 414. It also counts toward
    /// `maxHeaderBytes` with the rest of the request line and the header fields.
    public var maxTargetBytes: Int
    /// Arguments in the request's query (`&`-separated), at most: more is 414 at once and the connection closed.
    /// The server parses the query itself, so the bound is about the work a request may ask for, not memory.
    public var maxQueryParameters: Int = 128
    /// Request bodies held in memory at once on all connections, in bytes: reserved at admission from
    /// `Content-Length`, counted as they arrive when chunked. A request beyond it is answered 503 with
    /// `Retry-After: bodyBudgetRetryAfterSeconds`.
    public var bodyBudgetBytes: Int
    /// The `Retry-After` of a 503 for an exhausted body budget, in seconds.
    public var bodyBudgetRetryAfterSeconds: Int
    /// Serve HTTPS (TLS 1.2 and 1.3) with this certificate chain (PEM, server certificate first) and
    /// ``tlsPrivateKey``; nil serves plain HTTP. See ``HTTPServer/reloadCertificate(_:privateKey:)``.
    public var tlsCertificate: [UInt8]?
    /// The private key (PEM, unencrypted) of ``tlsCertificate``.
    public var tlsPrivateKey: [UInt8]?
    /// Deferred replies with a paced answer (``HTTPResponse/Resumption/paced``: the long-polls one change wakes)
    /// resumed at most while earlier ones are not yet picked up by the worker threads, while no more than
    /// ``resumeSlicesPerWake`` × this many connections are suspended (above, the slice grows with them). A worker
    /// serves every connection resumed before its turn in that turn, before it reads a new request, so this bounds
    /// how long `/healthz` or a write waits behind a wake; libmicrohttpd 0.9.75 walks every suspended connection of
    /// a worker on each turn that resumes any, so a smaller slice costs more CPU per woken request
    /// (docs/performance.md, "Held long-polls").
    public var resumeSlice: Int = 128
    /// How long a slice not yet picked up holds the next one back at most, in seconds.
    public var resumePatienceSeconds: Double = 0.05
    /// The least time between two slices while fewer answers are queued than a slice has room for, in seconds:
    /// answers that trickle in go a few together, not one slice (one walk of every suspended connection by the
    /// worker) each.
    public var resumeIntervalSeconds: Double = 0.002
    /// Connections begin with a PROXY protocol header from a trusted balancer, which names the client
    /// (``HTTPRequest/clientAddress`` is then the client's); nil: they do not (the peer is the client).
    public var proxyProtocol: ProxyProtocolSettings?
    /// The clock the server measures its deadlines on (the slow-client watchdog, the stop grace, the resume pacing):
    /// the machine's, or a test's.
    public var clock: TimeSource = .system

    public init(
        host: String = "0.0.0.0",
        port: UInt16 = 8080,
        threads: Int = HTTPServerConfiguration.coreCount,
        connectionLimit: Int = 16_000,
        perIPConnectionLimit: Int = 1024,
        connectionTimeoutSeconds: Int = 60,
        maxHeaderBytes: Int = 16 * 1024,
        maxBodyBytes: Int = 1024 * 1024,
        stopGraceSeconds: Double = 8,
        headerDeadlineSeconds: Double = 30,
        bodyDeadlineSeconds: Double = 60,
        maxTargetBytes: Int = 8 * 1024,
        bodyBudgetBytes: Int = 64 * 1024 * 1024,
        bodyBudgetRetryAfterSeconds: Int = 2,
        tlsCertificate: [UInt8]? = nil,
        tlsPrivateKey: [UInt8]? = nil
    ) {
        self.host = host
        self.port = port
        self.threads = max(1, threads)
        self.connectionLimit = connectionLimit
        self.perIPConnectionLimit = perIPConnectionLimit
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.stopGraceSeconds = stopGraceSeconds
        self.headerDeadlineSeconds = headerDeadlineSeconds
        self.bodyDeadlineSeconds = bodyDeadlineSeconds
        self.maxTargetBytes = maxTargetBytes
        self.bodyBudgetBytes = bodyBudgetBytes
        self.bodyBudgetRetryAfterSeconds = bodyBudgetRetryAfterSeconds
        self.tlsCertificate = tlsCertificate
        self.tlsPrivateKey = tlsPrivateKey
    }
}

#if canImport(Glibc)
    import Glibc
#endif

extension HTTPServerConfiguration {
    /// Descriptors of the open-file limit kept for the store, logs, listening sockets and the process's own files.
    public static let reservedFileDescriptors = 128

    /// libmicrohttpd's memory pool per connection (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`): the request line and
    /// header fields (``maxHeaderBytes``) plus room for the response's header block.
    public var connectionPoolBytes: Int { maxHeaderBytes + 4096 }

    /// What one connection may cost the process at most, in bytes, for sizing limits: its pool
    /// (``connectionPoolBytes``, all of it resident once a large header block has been read into it) and about
    /// 4 KiB more: libmicrohttpd's connection record, the request's Swift state and, while a long-poll is held, its
    /// suspended task (measured in docs/performance.md). The kernel's socket buffers are not in it.
    public var connectionCostBytes: Int { connectionPoolBytes + 4096 }

    /// The connection limit when none is configured: the open-file limit less
    /// ``reservedFileDescriptors``, and no more connections than half of `memoryBytes` holds at
    /// ``connectionCostBytes`` each (the other half is the snapshot, the variant cache and the allocator's slack).
    /// At least 64.
    /// - Parameters:
    ///   - openFiles: the soft `RLIMIT_NOFILE` (nil: unlimited).
    ///   - memoryBytes: the memory limit (a cgroup's `memory.max`, else the machine's physical memory).
    public func derivedConnectionLimit(openFiles: Int?, memoryBytes: Int) -> Int {
        let byMemory = max(0, memoryBytes) / 2 / connectionCostBytes
        let byFiles = openFiles.map { $0 - Self.reservedFileDescriptors } ?? Int.max
        return max(64, min(byMemory, byFiles))
    }

    /// The soft open-file limit (`RLIMIT_NOFILE`), nil when unlimited or unknown.
    public static var openFileLimit: Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(limit.rlim_cur)
    }

    /// The machine's physical memory in bytes (`_SC_PHYS_PAGES` × page size).
    public static var physicalMemoryBytes: Int {
        max(0, Int(sysconf(Int32(_SC_PHYS_PAGES)))) * max(1, Int(sysconf(Int32(_SC_PAGESIZE))))
    }

    /// `connectionLimit`, lowered to leave 128 descriptors of the open-file limit for the store, logs and
    /// listening sockets: above it libmicrohttpd would accept connections it cannot serve.
    public var effectiveConnectionLimit: Int {
        guard let openFiles = Self.openFileLimit else { return connectionLimit }
        return max(16, min(connectionLimit, openFiles - Self.reservedFileDescriptors))
    }

    /// The limit libmicrohttpd's daemon is given behind a PROXY protocol balancer: every worker's share of it (the
    /// daemon divides it among them) is above ``effectiveConnectionLimit``, which the server's listener keeps to. Its
    /// workers must never reach their own limit (``ServerCore/connectionsUntaken`` says why).
    public var daemonConnectionLimit: Int { (effectiveConnectionLimit + 64) * workerThreads }

    /// Raises this process's soft open-file limit to its hard limit (a server holds one descriptor per client).
    public static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// The pool size used: `threads`, at least 1. With one, libmicrohttpd runs its single internal polling thread
    /// (a pool of one is no pool): what a process limited to one CPU should run, since a second worker there only
    /// waits for the CPU the first one holds and preempts it when it gets it.
    public var workerThreads: Int { max(1, threads) }

    /// Above ``resumeSlice`` × this many suspended connections the slice grows with them, so that resuming all of
    /// them takes about this many slices: each slice costs a walk of the suspended list (libmicrohttpd 0.9.75), and
    /// a fixed slice would make a wake's CPU grow with the square of the connections it wakes.
    public static let resumeSlicesPerWake = 128

    /// The slice of paced resumes while `suspended` connections are suspended: ``resumeSlice``, or
    /// `suspended / resumeSlicesPerWake` when that is more.
    public func resumeSlice(suspended: Int) -> Int { max(1, resumeSlice, suspended / Self.resumeSlicesPerWake) }

    /// The number of online processors.
    public static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
