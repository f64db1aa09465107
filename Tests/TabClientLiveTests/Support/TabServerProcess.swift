import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real `tabserver serve` on 127.0.0.1 with a free port, an in-memory store and the repository's
/// `configs/`: the executable built next to this test bundle (or `TABSERVER_BIN`).
final class TabServerProcess: @unchecked Sendable {
    // Safety: `process` and `port` are set in init and only read after (Process is thread-safe to query and
    // signal); the log is behind a lock.
    static let adminToken = "tabclient-test-token"

    let process: Process
    let port: UInt16
    private let log: Locked<String>

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private init(process: Process, port: UInt16, log: Locked<String>) {
        self.process = process
        self.port = port
        self.log = log
    }

    /// Starts the server and waits (at most `deadline`, without blocking a thread) for its
    /// "serving … on HOST:PORT" log line.
    /// - Parameter store: `--store` (default `memory:`).
    static func start(store: String = "memory:", deadline: Duration = .seconds(30)) async throws -> TabServerProcess {
        let process = Process()
        process.executableURL = try executable(named: "tabserver", environment: "TABSERVER_BIN")
        process.arguments = [
            "serve", "--store", store, "--host", "127.0.0.1", "--port", "0", "--threads", "2", "--configs",
            Fixtures.repository.appendingPathComponent("configs").path,
        ]
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TABSERVER_") }
        environment["TABSERVER_ADMIN_TOKEN"] = adminToken
        process.environment = environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let log = Locked("")
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
            } else {
                log.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }
        try process.run()
        let start = ContinuousClock.now
        while true {
            if let port = log.withLock({ boundPort(in: $0) }) { return TabServerProcess(process: process, port: port, log: log) }
            guard process.isRunning, ContinuousClock.now - start < deadline else {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                throw TestFailure("tabserver did not report its port within \(deadline): \(log.withLock { $0 })")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A server a test did not stop gets SIGKILL (the test is over; nothing waits for it).
    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    /// The server's standard error so far.
    var output: String { log.withLock { $0 } }

    /// SIGTERM, then SIGKILL if it has not exited within 10 seconds; returns when it has exited.
    func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        let start = ContinuousClock.now
        while process.isRunning && ContinuousClock.now - start < .seconds(10) { try? await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// Runs `tabserver` with `arguments` to its end (at most `deadline`); throws unless it exits 0.
    static func run(_ arguments: [String], deadline: Duration = .seconds(30)) async throws {
        let process = Process()
        process.executableURL = try executable(named: "tabserver", environment: "TABSERVER_BIN")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TABSERVER_") }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let start = ContinuousClock.now
        while process.isRunning && ContinuousClock.now - start < deadline { try await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            throw TestFailure("tabserver \(arguments.joined(separator: " ")) ran over \(deadline)")
        }
        guard process.terminationStatus == 0 else {
            throw TestFailure("tabserver \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }

    /// The port in `serving … on 127.0.0.1:PORT with …` (Sources/tabserver/Serve.swift).
    static func boundPort(in log: String) -> UInt16? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("serving ") }),
            let range = line.range(of: "127.0.0.1:")
        else { return nil }
        return UInt16(line[range.upperBound...].prefix { $0.isNumber })
    }

    /// An executable of this package: `$environment` if set, else next to this test bundle (`.build/debug/X.xctest`,
    /// a binary on Linux and a directory on macOS), walking up a few levels.
    static func executable(named name: String, environment: String) throws -> URL {
        if let path = ProcessInfo.processInfo.environment[environment] { return URL(fileURLWithPath: path) }
        #if os(Linux)
            var directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        #else
            // Under `xctest` the process is the runner; the bundle is the loaded `.xctest`.
            let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") } ?? Bundle.main
            var directory = bundle.bundleURL.deletingLastPathComponent()
        #endif
        for _ in 0..<5 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw TestFailure("no \(name) executable next to the test bundle: build with `swift build --build-tests` (or set \(environment))")
    }
}

/// A failure of the test's own machinery, with what went wrong.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
