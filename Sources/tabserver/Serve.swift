import ArgumentParser
import Dispatch
import Logging
import MicroHTTPD
import TabService
import TabStore

#if canImport(Glibc)
    import Glibc
#endif

/// `tabserver serve`: the HTTP service.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve layouts over HTTP until SIGINT or SIGTERM.")

    @Option(help: "Address to listen on (env TABSERVER_HOST; default 0.0.0.0).") var host: String?
    @Option(help: "Port (env TABSERVER_PORT; default 8080; 0 picks a free one).") var port: UInt16?
    @Option(help: "sqlite:PATH, memory: (env TABSERVER_STORE; default sqlite:data/tabs.sqlite).") var store: String?
    @Option(help: "Directory with layouts/ and strings/ to import for accounts the store lacks (env TABSERVER_CONFIGS).") var configs:
        String?
    @Option(help: "libmicrohttpd worker threads (env TABSERVER_THREADS; default: the core count).") var threads: Int?
    @Option(help: "Cache-Control of client answers (env TABSERVER_CACHE_CONTROL; default no-cache).") var cacheControl: String?
    @Option(help: "MiB that compiled variants may hold before unused ones are dropped (env TABSERVER_CACHE_LIMIT_MB; default 512).")
    var cacheLimit: Int?

    /// `--cache-limit` or `TABSERVER_CACHE_LIMIT_MB`, 1 to 1,048,576 MiB (default 512).
    func cacheLimitMiB(_ environment: Environment) throws -> Int {
        let limit = try cacheLimit ?? environment.integer("TABSERVER_CACHE_LIMIT_MB") ?? 512
        guard (1...1 << 20).contains(limit) else { throw ValidationError("the cache limit is 1 to 1048576 MiB, not \(limit)") }
        return limit
    }

    func run() async throws {
        let environment = Environment()
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "tabserver")
        logger.logLevel = .info

        // Handle SIGINT/SIGTERM on a dispatch source only: ignoring them first keeps the default action
        // (exit without a graceful stop) from ever running on any thread.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)

        let storeURL = store ?? environment["TABSERVER_STORE"] ?? "sqlite:data/tabs.sqlite"
        let tabStore = try openAnyStore(url: storeURL)
        if let directory = configs ?? environment["TABSERVER_CONFIGS"] {
            let report = try await ConfigsDirectory.load(directory).importInto(tabStore, force: false)
            logger.info(
                "configs \(directory): imported \(report.imported.count) (\(report.imported.joined(separator: ", "))), kept the store's \(report.skipped.count)"
            )
            for refusal in report.refused { logger.error("configs: not imported: \(refusal)") }
        }
        let tokens = try AdminTokens.load(environment: environment, logger: logger)
        let service = try await TabService(
            store: tabStore,
            configuration: ServiceConfiguration(
                cacheControl: cacheControl ?? environment["TABSERVER_CACHE_CONTROL"] ?? "no-cache", adminTokens: tokens,
                variantCacheBytes: try cacheLimitMiB(environment) << 20),
            logger: logger)
        let configuration = HTTPServerConfiguration(
            host: host ?? environment["TABSERVER_HOST"] ?? "0.0.0.0",
            port: try port ?? environment.integer("TABSERVER_PORT").map(UInt16.init) ?? 8080,
            threads: try threads ?? environment.integer("TABSERVER_THREADS") ?? HTTPServerConfiguration.coreCount)
        HTTPServerConfiguration.raiseOpenFileLimit()
        let server = try HTTPServer(configuration: configuration, handler: service)
        logger.info(
            "serving \(service.layoutCount) layouts from \(storeURL) on \(configuration.host):\(server.port) with \(configuration.workerThreads) worker threads, up to \(configuration.effectiveConnectionLimit) connections"
        )

        let signal = await waitForTerminationSignal()
        logger.info("\(signal == SIGTERM ? "SIGTERM" : "SIGINT"): stopping (finishing requests in flight)")
        server.stop()
        logger.info("stopped")
    }
}

/// Suspends until SIGINT or SIGTERM arrives; returns which.
func waitForTerminationSignal() async -> Int32 {
    await withCheckedContinuation { continuation in
        let once = SignalLatch(continuation)
        for number in [SIGINT, SIGTERM] {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { once.fire(number) }
            source.resume()
            once.keep(source)
        }
    }
}

/// Resumes the continuation on the first signal only, and keeps the sources alive until then.
final class SignalLatch: @unchecked Sendable {
    // Safety: `lock` guards every field.
    private let lock = NSLockLike()
    private var continuation: CheckedContinuation<Int32, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Int32, Never>) { self.continuation = continuation }

    func keep(_ source: any DispatchSourceSignal) { lock.withLock { sources.append(source) } }

    func fire(_ number: Int32) {
        let pending = lock.withLock { () -> CheckedContinuation<Int32, Never>? in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume(returning: number)
    }
}

/// A pthread mutex (the executable has no Synchronization import on its own).
final class NSLockLike: @unchecked Sendable {
    // Safety: a pthread mutex is made for sharing between threads.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()

    func withLock<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
}
