import ArgumentParser
import Dispatch
import Foundation
import Logging
import MicroHTTPD
import Synchronization
import TabDelivery
import TabReview
import TabRuntime
import TabService
import TabStore
import TabWebhooks

#if canImport(Glibc)
    import Glibc
#endif

/// `tabserver serve`: the HTTP service.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve layouts over HTTP until SIGINT or SIGTERM.")

    @Option(help: "Address to listen on (env TABSERVER_HOST; default 0.0.0.0).") var host: String?
    @Option(help: "Port (env TABSERVER_PORT; default 8080; 0 picks a free one).") var port: UInt16?
    @Option(
        help: """
            sqlite:PATH, memory: or postgres://user@host:port/db (env TABSERVER_STORE; default sqlite:data/tabs.sqlite). \
            Give a PostgreSQL password in a file (TABSERVER_STORE_PASSWORD_FILE or PGPASSFILE), not in the URL.
            """) var store: String?
    @Option(help: "Directory with layouts/ and strings/ to import for accounts the store lacks (env TABSERVER_CONFIGS).") var configs:
        String?
    @Option(
        help:
            "libmicrohttpd worker threads (env TABSERVER_THREADS; default: the CPUs the process may use, the affinity mask and the cgroup quota, the smaller)."
    ) var threads: Int?
    @Option(help: "Cache-Control of client answers (env TABSERVER_CACHE_CONTROL; default no-cache).") var cacheControl: String?
    @Option(help: "Cache-Control of client-plane errors (env TABSERVER_ERROR_CACHE_CONTROL; default no-store).") var errorCacheControl:
        String?
    @Option(
        help: "MiB that compiled variants may hold (env TABSERVER_CACHE_LIMIT_MB; default: a quarter of the memory limit, at most 512).")
    var cacheLimit: Int?
    @Option(help: "Longest long-poll in seconds (env TABSERVER_MAX_WAIT; default 300).") var maxWait: Int?
    @Option(help: "Serve HTTPS with this PEM certificate chain (env TABSERVER_TLS_CERT; read again on SIGHUP).") var tlsCert: String?
    @Option(help: "The PEM private key of --tls-cert (env TABSERVER_TLS_KEY).") var tlsKey: String?
    @Option(help: "Connections one client address may hold (env TABSERVER_PER_ADDRESS_CONNECTIONS; default 1024; 0: no share).")
    var perAddressConnections: Int?
    @Option(
        help: """
            Long-polls one client address may hold (env TABSERVER_PER_ADDRESS_HELD; default 512, and none when \
            --per-address-connections is 0; 0: no limit, which lifts the per-address connection default too).
            """)
    var perAddressHeld: Int?
    @Option(
        help: """
            Connections open at once (env TABSERVER_MAX_CONNECTIONS; default: the open-file limit less 128, and no more \
            than half the memory limit holds at ~24 KiB each; never above the open-file limit less 128).
            """)
    var maxConnections: Int?
    @Option(
        help: """
            Long-polls held at once (env TABSERVER_MAX_HELD; default and most: the connection limit less an eighth, at \
            least 64, which stays for /healthz, reads and writes).
            """)
    var maxHeld: Int?
    @Option(
        help: """
            Request line and header fields together, in bytes (env TABSERVER_MAX_HEADER_BYTES; default 16384, 2048 to 65536). \
            Each connection's memory pool is this plus 4 KiB, all of it resident once a kept-alive connection was answered.
            """)
    var maxHeaderBytes: Int?
    @Option(
        help: """
            Woken long-polls resumed at a time while earlier ones are answered (env TABSERVER_RESUME_SLICE; default 128, \
            1 to 65536; grows above 128 × it held): smaller keeps /healthz and writes answering sooner during a wake, \
            larger costs less CPU per woken poll.
            """)
    var resumeSlice: Int?
    @Option(
        help: """
            A proxy's address whose X-Forwarded-For / Forwarded names the client, and with --proxy-protocol a balancer \
            (address or network, e.g. 10.0.0.0/24) whose PROXY header does (repeat; env TABSERVER_TRUSTED_PROXIES, comma-separated).
            """)
    var trustedProxy: [String] = []
    @Flag(
        help: """
            Every connection begins with a PROXY protocol header (v1 or v2: HAProxy send-proxy-v2, a network load balancer) \
            from a --trusted-proxy, which names the client; other peers are closed unanswered (env TABSERVER_PROXY_PROTOCOL=1).
            """)
    var proxyProtocol = false
    @Option(
        help:
            "The header the trusted proxies name the client in: x-forwarded-for (default) or forwarded; the other is ignored (env TABSERVER_FORWARDED_HEADER)."
    )
    var forwardedHeader: String?
    @Option(help: "Failed logins per address and minute before a 30 s lockout (env TABSERVER_AUTH_FAILURES; default 10; 0: never).")
    var authFailures: Int?
    @Option(
        help: """
            Environments, where changes enter first and the one apps get last, e.g. staging,production \
            (env TABSERVER_ENVIRONMENTS; default production).
            """)
    var environments: String?
    @Option(help: "Days the audit log keeps an entry (env TABSERVER_AUDIT_RETENTION; default 400).")
    var auditRetention: Int?
    @Option(help: "New install ids one client address may bring into one rollout's reports; 0 = no limit (default 100).")
    var reportInstallsPerAddress: Int?
    @Option(help: "Report requests one client address may send a minute, on each replica; 0 = no limit (default 600).")
    var reportRequestsPerMinute: Int?
    @Option(help: "Days the apps' report counts of an ended rollout or a version are kept after the last report (default 30).")
    var reportRetention: Int?
    @Option(help: "The most entries the audit log keeps, the oldest pruned first (env TABSERVER_AUDIT_MAX_ROWS; default 1000000).")
    var auditMaxRows: Int?
    @Option(help: "Days delivered and failed webhook deliveries are kept (env TABSERVER_WEBHOOK_RETENTION; default 30).")
    var webhookRetention: Int?
    @Flag(
        help:
            "Let webhooks deliver to loopback, private, link-local and other internal addresses (env TABSERVER_WEBHOOK_ALLOW_PRIVATE=1; tests and private networks)."
    )
    var webhookAllowPrivate = false
    @Option(
        name: .customLong("purge-url"),
        help: ArgumentHelp(
            "A cache to send PURGE to after every change that moves what apps get, e.g. http://127.0.0.1:6081/ (repeatable; env TABSERVER_PURGE_URLS, comma-separated).",
            valueName: "URL"))
    var purgeURLs: [String] = []
    @OptionGroup var signing: SigningOptions
    @Option(help: "max-age of …/tabs/manifest in seconds, never beyond a rollout's next step (env TABSERVER_MANIFEST_MAX_AGE; default 30).")
    var manifestMaxAge: Int?
    @Option(help: "Days a declared app build stays live after it was declared or last seen (env TABSERVER_BUILD_LIVE_DAYS; default 30).")
    var buildLiveDays: Int?
    @Option(help: "The most app builds declared at once; a new one past it is 409 (env TABSERVER_MAX_BUILDS; default 1000).")
    var maxBuilds: Int?
    @Option(
        help:
            "The most …/tabs/manifest answers kept for accounts without a layout of their own, the recently asked (env TABSERVER_MAX_FALLBACK_MANIFESTS; default 10000)."
    )
    var maxFallbackManifests: Int?
    @Option(help: "Days a change request that ended is kept (env TABSERVER_CHANGE_REQUEST_RETENTION; default 90).")
    var changeRequestRetention: Int?
    @Option(
        help:
            "Changes to this environment wait for N approvals (ENV or ENV:N, N 1 to 10; repeatable; env TABSERVER_REQUIRE_APPROVAL, comma-separated)."
    )
    var requireApproval: [String] = []

    /// `--cache-limit` or `TABSERVER_CACHE_LIMIT_MB`, 1 to 1,048,576 MiB (default from the container's memory limit).
    func cacheLimitMiB(_ environment: Environment, limits: ContainerLimits) throws -> Int {
        let limit = try cacheLimit ?? environment.integer("TABSERVER_CACHE_LIMIT_MB") ?? limits.cacheLimitMiB()
        guard (1...1 << 20).contains(limit) else { throw ValidationError("the cache limit is 1 to 1048576 MiB, not \(limit)") }
        return limit
    }

    /// `--max-connections` (`TABSERVER_MAX_CONNECTIONS`) or the limit derived from the open-file and memory limits,
    /// and `--max-held` (`TABSERVER_MAX_HELD`), nil when not given (then the connection limit sets it).
    /// - Parameters:
    ///   - memoryBytes: the memory limit: a cgroup's, else the machine's physical memory.
    ///   - openFiles: the soft open-file limit after ``HTTPServerConfiguration/raiseOpenFileLimit()``.
    func connectionLimits(
        _ environment: Environment, http: HTTPServerConfiguration, memoryBytes: Int, openFiles: Int?
    ) throws -> (connections: Int, held: Int?) {
        let connections =
            try maxConnections ?? environment.integer("TABSERVER_MAX_CONNECTIONS")
            ?? http.derivedConnectionLimit(openFiles: openFiles, memoryBytes: memoryBytes)
        guard connections >= 16 else { throw ValidationError("--max-connections is 16 or more, not \(connections)") }
        let held = try maxHeld ?? environment.integer("TABSERVER_MAX_HELD")
        if let held, held < 1 { throw ValidationError("--max-held is 1 or more, not \(held)") }
        return (connections, held)
    }

    /// `--resume-slice` or `TABSERVER_RESUME_SLICE`, 1 to 65,536 (nil: the configuration's 128).
    func resumeSliceSize(_ environment: Environment) throws -> Int? {
        guard let slice = try resumeSlice ?? environment.integer("TABSERVER_RESUME_SLICE") else { return nil }
        guard (1...65_536).contains(slice) else { throw ValidationError("--resume-slice is 1 to 65536, not \(slice)") }
        return slice
    }

    /// `--proxy-protocol` (or `TABSERVER_PROXY_PROTOCOL=1`) with the `--trusted-proxy` list as the balancers that may
    /// send a header; nil without the flag.
    func proxyProtocolSettings(_ environment: Environment, trustedProxies: [String]) throws -> ProxyProtocolSettings? {
        guard proxyProtocol || environment["TABSERVER_PROXY_PROTOCOL"] == "1" else { return nil }
        guard !trustedProxies.isEmpty else {
            throw ValidationError(
                "--proxy-protocol needs the balancers' addresses: give --trusted-proxy (or TABSERVER_TRUSTED_PROXIES), or every connection is refused"
            )
        }
        do throws(MicroHTTPDError) {
            return try ProxyProtocolSettings(trustedPeers: trustedProxies)
        } catch {
            throw ValidationError("--trusted-proxy: \(error.description)")
        }
    }

    /// `--max-header-bytes` or `TABSERVER_MAX_HEADER_BYTES`, 2,048 to 65,536 (nil: the configuration's 16 KiB).
    /// `--report-installs-per-address` (default 100) and `--report-requests-per-minute` (default 600); 0 is no limit.
    func reportLimitsPerAddress() throws -> (installs: Int, requestsPerMinute: Int) {
        let installs = reportInstallsPerAddress ?? 100
        guard installs >= 0 else { throw ValidationError("--report-installs-per-address is 0 (no limit) or more") }
        let requests = reportRequestsPerMinute ?? 600
        guard requests >= 0 else { throw ValidationError("--report-requests-per-minute is 0 (no limit) or more") }
        return (installs, requests)
    }

    func headerLimit(_ environment: Environment) throws -> Int? {
        guard let bytes = try maxHeaderBytes ?? environment.integer("TABSERVER_MAX_HEADER_BYTES") else { return nil }
        guard (2048...65_536).contains(bytes) else { throw ValidationError("--max-header-bytes is 2048 to 65536, not \(bytes)") }
        return bytes
    }

    func run() async throws {
        let environment = Environment()
        LoggingSystem.bootstrap { QuotingLogHandler.standardError(label: $0) }
        var logger = Logger(label: "tabserver")
        logger.logLevel = .info

        // Handle SIGINT/SIGTERM/SIGHUP on dispatch sources only: ignoring them first keeps the default action
        // (exit without a graceful stop) from ever running on any thread.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)

        // Until the server runs, SIGINT/SIGTERM end the process at once (nothing to drain yet): a store that does
        // not answer at start never keeps the process from stopping.
        let starting = StartupGuard()
        Task {
            let signal = await waitForSignal([SIGINT, SIGTERM])
            if starting.isStarting {
                logger.info("\(signal == SIGTERM ? "SIGTERM" : "SIGINT") while starting: exiting")
                Glibc.exit(0)
            }
        }
        let limits = ContainerLimits.current()
        let cores = HTTPServerConfiguration.coreCount
        logger.info("CPUs this process may use: \(limits.usableCPUs(cores: cores)), from \(limits.usableCPUsReason(cores: cores))")
        let storeURL = try StoreLocation(
            url: store ?? environment["TABSERVER_STORE"] ?? "sqlite:data/tabs.sqlite", environment: environment)
        let tokens = try AdminTokens.load(environment: environment, logger: logger)
        var exposedKeys: [String] = []
        let signer = try signing.signer(environment) { exposedKeys.append($0) }
        for exposure in exposedKeys { logger.warning("\(exposure)") }
        let maxWait = try maxWait ?? environment.integer("TABSERVER_MAX_WAIT") ?? 300
        guard maxWait >= 0 else { throw ValidationError("--max-wait is a number of seconds ≥ 0, not \(maxWait)") }
        let tls = try TLSFiles(certificate: tlsCert ?? environment["TABSERVER_TLS_CERT"], key: tlsKey ?? environment["TABSERVER_TLS_KEY"])
        var http = HTTPServerConfiguration(
            host: host ?? environment["TABSERVER_HOST"] ?? "0.0.0.0",
            port: try port ?? environment.integer("TABSERVER_PORT").map(UInt16.init) ?? 8080,
            threads: try threads ?? environment.integer("TABSERVER_THREADS")
                ?? limits.workerThreads(cores: cores))
        // Either per-address limit set to 0 lifts the other's default: behind a balancer that hides client
        // addresses every phone shares a few, and one lifted limit with the other still in place would bind.
        let perAddressConnections = try perAddressConnections ?? environment.integer("TABSERVER_PER_ADDRESS_CONNECTIONS")
        let perAddressHeld = try perAddressHeld ?? environment.integer("TABSERVER_PER_ADDRESS_HELD")
        guard (perAddressConnections ?? 0) >= 0, (perAddressHeld ?? 0) >= 0 else {
            throw ValidationError("--per-address-connections and --per-address-held are numbers ≥ 0 (0: no limit)")
        }
        if let perAddress = perAddressConnections ?? (perAddressHeld == 0 ? 0 : nil) {
            http.perIPConnectionLimit = perAddress
        }
        if let tls {
            (http.tlsCertificate, http.tlsPrivateKey) = try tls.read()
        }
        if let headerBytes = try headerLimit(environment) {
            http.maxHeaderBytes = headerBytes
            http.maxTargetBytes = min(http.maxTargetBytes, headerBytes - 64)  // the target is part of the header block
        }
        if let slice = try resumeSliceSize(environment) { http.resumeSlice = slice }
        let trustedProxies = trustedProxy.isEmpty ? environment.list("TABSERVER_TRUSTED_PROXIES") : trustedProxy
        http.proxyProtocol = try proxyProtocolSettings(environment, trustedProxies: trustedProxies)
        HTTPServerConfiguration.raiseOpenFileLimit()
        let (connections, held) = try connectionLimits(
            environment, http: http, memoryBytes: limits.memoryBytes ?? HTTPServerConfiguration.physicalMemoryBytes,
            openFiles: HTTPServerConfiguration.openFileLimit)
        http.connectionLimit = connections
        if http.effectiveConnectionLimit < connections {
            logger.warning(
                "--max-connections \(connections) is above what the open-file limit allows: \(http.effectiveConnectionLimit) (raise ulimit -n)"
            )
        }

        // While a slow store is awaited (and the first snapshot built), probes answer on the port; the service takes
        // it over then (the same port even when --port 0 picked it).
        let probes = StartupProbes(reason: "waiting for the store \(storeURL.redacted)")
        let probeServer = StartupProbeServer(configuration: http, probes: probes, logger: logger)
        let slowStore = Task {
            try await Task.sleep(for: .seconds(1))
            probeServer.start()
        }
        let tabStore = try await openStoreRetrying(storeURL, logger: logger, probes: probes) { probeServer.start() }
        slowStore.cancel()
        if let port = probeServer.port {
            http.port = port
            probes.waiting(for: "building the first snapshot")
        }
        var service = ServiceConfiguration(
            cacheControl: cacheControl ?? environment["TABSERVER_CACHE_CONTROL"] ?? "no-cache",
            errorCacheControl: errorCacheControl ?? environment["TABSERVER_ERROR_CACHE_CONTROL"] ?? "no-store",
            maxWaitSeconds: maxWait, adminTokens: tokens,
            variantCacheBytes: try cacheLimitMiB(environment, limits: limits) << 20,
            trustedProxies: Set(trustedProxies),
            authFailuresPerMinute: try authFailures ?? environment.integer("TABSERVER_AUTH_FAILURES") ?? 10)
        // Unless given, as many as the connection limit leaves beside its reserve (ServerApplication lowers it so).
        service.heldRequestLimit = held ?? Int.max
        service.heldRequestsPerAddress = perAddressHeld ?? (http.perIPConnectionLimit == 0 ? 0 : service.heldRequestsPerAddress)
        let heldLimit = ServerApplication.heldRequestLimits(
            http, total: service.heldRequestLimit, perAddress: service.heldRequestsPerAddress)
        if let held, heldLimit.total < held {
            logger.warning("--max-held \(held) leaves no reserve for /healthz and writes: \(heldLimit.total) long-polls held at most")
        }
        let header = forwardedHeader ?? environment["TABSERVER_FORWARDED_HEADER"] ?? "x-forwarded-for"
        guard let forwarded = ServiceConfiguration.ForwardedHeader(rawValue: header.lowercased()) else {
            throw ValidationError("--forwarded-header is x-forwarded-for or forwarded, not '\(header)'")
        }
        service.forwardedHeader = forwarded
        service.auditRetentionDays = try environment.integer(
            auditRetention, "TABSERVER_AUDIT_RETENTION", default: 400, atLeast: 1, else: "--audit-retention is a number of days, 1 or more")
        (service.reportInstallsPerAddress, service.reportRequestsPerMinute) = try reportLimitsPerAddress()
        service.reportRetentionDays = reportRetention ?? 30
        guard service.reportRetentionDays >= 1 else { throw ValidationError("--report-retention is a number of days, 1 or more") }
        service.auditMaxRows = try environment.integer(
            auditMaxRows, "TABSERVER_AUDIT_MAX_ROWS", default: 1_000_000, atLeast: 1000, else: "--audit-max-rows is 1000 or more")
        service.webhookRetentionDays = try environment.integer(
            webhookRetention, "TABSERVER_WEBHOOK_RETENTION", default: 30, atLeast: 1,
            else: "--webhook-retention is a number of days, 1 or more")
        service.webhookDeliveries = true
        service.signer = signer
        service.manifestMaxAgeSeconds = try environment.integer(
            manifestMaxAge, "TABSERVER_MANIFEST_MAX_AGE", default: 30, atLeast: 0, else: "--manifest-max-age is a number of seconds ≥ 0")
        service.buildLiveDays = try environment.integer(
            buildLiveDays, "TABSERVER_BUILD_LIVE_DAYS", default: 30, atLeast: 1, else: "--build-live-days is a number of days, 1 or more")
        service.maxBuilds = try environment.integer(
            maxBuilds, "TABSERVER_MAX_BUILDS", default: 1_000, atLeast: 1, else: "--max-builds is a number of builds, 1 or more")
        service.maxFallbackManifests = try environment.integer(
            maxFallbackManifests, "TABSERVER_MAX_FALLBACK_MANIFESTS", default: 10_000, atLeast: 2,
            else: "--max-fallback-manifests is a number of manifests, 2 or more")
        service.changeRequestRetentionDays = try environment.integer(
            changeRequestRetention, "TABSERVER_CHANGE_REQUEST_RETENTION", default: 90, atLeast: 1,
            else: "--change-request-retention is a number of days, 1 or more")
        // The environments first: --require-approval names one of them.
        if let named = environments ?? environment["TABSERVER_ENVIRONMENTS"] {
            do throws(RolloutError) {
                service.environments = try EnvironmentList(parsing: named).names.map(\.text)
            } catch {
                throw ValidationError(error.description)
            }
        }
        let protected = requireApproval.isEmpty ? environment.list("TABSERVER_REQUIRE_APPROVAL") : requireApproval
        for item in protected {
            do throws(ReviewError.Parse) {
                try service.approvals.add(item)
            } catch {
                throw ValidationError(error.description)
            }
        }
        for name in service.approvals.required.keys where !service.environments.contains(name) {
            throw ValidationError(
                "--require-approval names '\(name)', which is not one of the environments (\(service.environments.joined(separator: ", ")))"
            )
        }
        service.purgeURLs = purgeURLs.isEmpty ? environment.list("TABSERVER_PURGE_URLS") : purgeURLs
        for url in service.purgeURLs where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ValidationError("--purge-url '\(url)' is not an http or https URL")
        }
        if webhookAllowPrivate || environment["TABSERVER_WEBHOOK_ALLOW_PRIVATE"] == "1" {
            service.webhookPolicy = .allowEverything
            logger.warning("--webhook-allow-private: webhooks may deliver to internal addresses")
        }
        let application = try await ServerApplication(
            store: tabStore, configs: configs ?? environment["TABSERVER_CONFIGS"], service: service, http: http, logger: logger,
            beforeListening: { probeServer.stop() })
        let server = application.server
        starting.started()
        logger.info(
            "serving \(application.service.layoutCount) layouts from \(storeURL.redacted) on \(http.host):\(server.port) with \(http.workerThreads) worker thread\(http.workerThreads == 1 ? "" : "s"), up to \(http.effectiveConnectionLimit) connections and \(heldLimit.total) held long-polls (\(heldLimit.perAddress == 0 ? "no limit" : "\(heldLimit.perAddress)") per address)\(tls == nil ? "" : ", HTTPS")\(http.proxyProtocol == nil ? "" : ", PROXY protocol from \(trustedProxies.joined(separator: ", "))")\(limits.sources.isEmpty ? "" : " (limits from \(limits.sources.joined(separator: ", ")))")"
        )

        while true {
            let signal = await waitForSignal([SIGINT, SIGTERM, SIGHUP])
            if signal == SIGHUP, let tls {
                do {
                    let (certificate, key) = try tls.read()
                    try server.reloadCertificate(certificate, privateKey: key)
                    logger.info("SIGHUP: TLS certificate read again from \(tls.certificate); open connections kept")
                } catch {
                    logger.error("SIGHUP: the TLS certificate was not reloaded: \(error)")
                }
                continue
            }
            if signal == SIGHUP { continue }
            logger.info("\(signal == SIGTERM ? "SIGTERM" : "SIGINT"): stopping (held long-polls answered, requests in flight finished)")
            break
        }
        application.stop()
        logger.info("stopped")
    }

    /// Opens the store, retrying with backoff while it does not answer (a database that starts after the
    /// service is normal in a cluster); each attempt has its own deadline, and SIGTERM still stops the process.
    /// - Parameter failed: called after each failed attempt (the first starts the probes).
    func openStoreRetrying(
        _ location: StoreLocation, logger: Logger, probes: StartupProbes, failed: () -> Void
    ) async throws -> any TabStore {
        var delay = 0.5
        var attempt = 1
        while true {
            do {
                // Opening connects and migrates: blocking libpq/sqlite3 calls, kept off the cooperative pool.
                let store = try await onOwnThread { try openAnyStore(location) }
                if try await store.currentLayouts().count >= 0 { return store }
            } catch let error as StoreError {
                switch error {
                case .unsupportedURL, .schemaTooNew: throw error  // waiting cannot fix these
                default: break
                }
                logger.warning("the store \(location.redacted) does not answer (attempt \(attempt)): \(error); retrying in \(delay) s")
                probes.waiting(for: "the store \(location.redacted) does not answer (attempt \(attempt), retrying in \(delay) s): \(error)")
                failed()
            }
            try await Task.sleep(for: .seconds(delay))
            delay = min(delay * 2, 10)
            attempt += 1
        }
    }
}

/// Whether `serve` is still starting (so a signal ends the process at once).
final class StartupGuard: Sendable {
    private let starting = Mutex(true)

    var isStarting: Bool { starting.withLock { $0 } }
    func started() { starting.withLock { $0 = false } }
}

/// Runs a blocking call on a thread of its own and awaits it.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// `--tls-cert` and `--tls-key`, read at start and again on SIGHUP.
struct TLSFiles {
    let certificate: String
    let key: String

    init?(certificate: String?, key: String?) throws {
        switch (certificate, key) {
        case (nil, nil): return nil
        case (let certificate?, let key?): (self.certificate, self.key) = (certificate, key)
        default: throw ValidationError("--tls-cert and --tls-key go together")
        }
    }

    func read() throws -> ([UInt8], [UInt8]) {
        guard let certificate = FileManager.default.contents(atPath: certificate) else {
            throw ValidationError("--tls-cert \(self.certificate) cannot be read")
        }
        guard let key = FileManager.default.contents(atPath: key) else { throw ValidationError("--tls-key \(self.key) cannot be read") }
        return (Array(certificate), Array(key))
    }
}

/// Suspends until one of `signals` arrives; returns which.
func waitForSignal(_ signals: [Int32]) async -> Int32 {
    await withCheckedContinuation { continuation in
        let once = SignalLatch(continuation)
        for number in signals {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { once.fire(number) }
            source.resume()
            once.keep(source)
        }
    }
}

/// Resumes the continuation on the first signal only, and keeps the sources alive until then.
final class SignalLatch: Sendable {
    /// A source held only to keep it alive, never used again. Safety: libdispatch objects may be shared between threads.
    private struct Kept: @unchecked Sendable { let source: any DispatchSourceSignal }
    private struct State {
        var continuation: CheckedContinuation<Int32, Never>?
        var sources: [Kept] = []
    }
    private let state: Mutex<State>

    init(_ continuation: CheckedContinuation<Int32, Never>) { state = Mutex(State(continuation: continuation)) }

    func keep(_ source: any DispatchSourceSignal) {
        let kept = Kept(source: source)
        state.withLock { $0.sources.append(kept) }
    }

    func fire(_ number: Int32) { state.withLock { $0.continuation.take() }?.resume(returning: number) }
}

extension Environment {
    /// `flag`, else the integer variable `name`, else `fallback`; one under `minimum` is refused with `refusal`.
    func integer(_ flag: Int?, _ name: String, default fallback: Int, atLeast minimum: Int, else refusal: String) throws -> Int {
        let value = try flag ?? integer(name) ?? fallback
        guard value >= minimum else { throw ValidationError(refusal) }
        return value
    }
}
