import Foundation
import TabStore
import TabStorePostgres
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `tabserver migrate` as a process: while a server writes to the source, and killed with SIGKILL mid-copy.
@Suite(.serialized) struct MigrateCommandTests {
    static var enabled: Bool { FileManager.default.isExecutableFile(atPath: ServerProcess.binary) }
    static var postgres: Bool { enabled && ReplicationTests.serverURL != nil }

    /// A running `tabserver migrate`, its standard output and error gathered in files.
    struct Run {
        let process: Process
        let out: String
        let err: String

        static func start(_ arguments: [String], directory: String) throws -> Run {
            let (out, err) = (directory + "/migrate-\(UUID().uuidString).out", directory + "/migrate-\(UUID().uuidString).err")
            _ = FileManager.default.createFile(atPath: out, contents: nil)
            _ = FileManager.default.createFile(atPath: err, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ServerProcess.binary)
            process.arguments = ["migrate"] + arguments
            process.standardOutput = FileHandle(forWritingAtPath: out)
            process.standardError = FileHandle(forWritingAtPath: err)
            try process.run()
            return Run(process: process, out: out, err: err)
        }

        var output: String { (try? String(contentsOfFile: out, encoding: .utf8)) ?? "" }
        var errors: String { (try? String(contentsOfFile: err, encoding: .utf8)) ?? "" }

        func finish() -> Int32 {
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    /// A new directory, removed when `body` returns.
    static func inDirectory(_ body: (String) async throws -> Void) async throws {
        let path = NSTemporaryDirectory() + "migrate-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await body(path)
    }

    /// A SQLite store with `accounts` accounts of three versions each (512 bytes of source per version), written
    /// by the sqlite3 shell in one statement (through the store's own path this would take minutes).
    static func largeStore(_ path: String, accounts: Int) throws {
        _ = try SQLiteStore(path: path)
        _ = try sqliteShell(
            path,
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(accounts * 3))
            INSERT INTO layout_versions (account, version, source, content_type, etag, created_at_ms, author, message, deleted, extends)
            SELECT 'account-' || ((i - 1) / 3), (i - 1) % 3 + 1, randomblob(512), 'application/json',
                   '"v' || ((i - 1) % 3 + 1) || '-' || hex(randomblob(10)) || '"', 1700000000000 + i, 'seed', 'row ' || i, 0, ''
            FROM n;
            INSERT INTO layout_pointers (account, environment, version)
            SELECT account, 'production', MAX(version) FROM layout_versions GROUP BY account;
            """)
    }

    @Test(.enabled(if: MigrateCommandTests.enabled))
    func aCopyIsTakenWhileTheServerWritesAndIsServedByANewServer() async throws {
        try await Self.inDirectory { directory in try await copyWhileServing(directory) }
    }

    func copyWhileServing(_ directory: String) async throws {
        let source = "sqlite:\(directory)/tabs.sqlite"
        let server = try await ServerProcess.start(store: source, directory: directory, configs: true)
        defer { server.kill9() }
        let writer = Task { await CrashConsistencyTests.writeUntilKilled(port: server.port, account: "busy", cycle: 0) }
        try await Task.sleep(for: .milliseconds(300))
        var targets = ["sqlite:\(directory)/backup.sqlite"]
        if let url = ReplicationTests.serverURL, !url.isEmpty { targets.append(try ReplicationTests.freshDatabase()) }
        for target in targets {
            let run = try Run.start(["--from", source, "--to", target], directory: directory)
            #expect(run.finish() == 0, "\(target): \(run.errors)")
            #expect(run.output.contains("layout_versions: "), "\(run.output)")
            #expect(run.output.contains("checked in the target: every table's row count, every version's tag"), "\(run.output)")
            let copy = try await ServerProcess.start(store: target, directory: directory)
            let jack = try await HTTPTestClient(port: copy.port).send("GET", "/v1/accounts/jack/tabs")
            let original = try await HTTPTestClient(port: server.port).send("GET", "/v1/accounts/jack/tabs")
            #expect(jack.status == 200 && jack.header("ETag") == original.header("ETag"))
            copy.kill9()
        }
        server.kill9()
        #expect(await writer.value.count > 0, "the server acknowledged writes during the copies")
    }

    @Test(.enabled(if: MigrateCommandTests.enabled))
    func aNonEmptyTargetIsRefusedWithExitStatusOne() async throws {
        try await Self.inDirectory { directory in try refuseNonEmpty(directory) }
    }

    func refuseNonEmpty(_ directory: String) throws {
        try Self.largeStore(directory + "/a.sqlite", accounts: 2)
        try Self.largeStore(directory + "/b.sqlite", accounts: 1)
        let run = try Run.start(["--from", "sqlite:\(directory)/a.sqlite", "--to", "sqlite:\(directory)/b.sqlite"], directory: directory)
        #expect(run.finish() == 1)
        #expect(run.errors.contains("the target store is not empty (layout_pointers has 1 rows)"), "\(run.errors)")
        #expect(try sqliteShell(directory + "/b.sqlite", "SELECT count(*) FROM layout_versions") == ["3"])
    }

    /// SIGKILL once the first progress line is out: the target is left empty, and a second run then completes.
    @Test(.enabled(if: MigrateCommandTests.enabled), arguments: ["sqlite", "postgres"])
    func aKilledCopyLeavesTheTargetEmpty(target kind: String) async throws {
        guard kind == "sqlite" || Self.postgres else { return }
        try await Self.inDirectory { directory in try await killMidCopy(kind, directory) }
    }

    func killMidCopy(_ kind: String, _ directory: String) async throws {
        let source = directory + "/big.sqlite"
        try Self.largeStore(source, accounts: 3_000)
        let target = kind == "sqlite" ? "sqlite:\(directory)/copy.sqlite" : try ReplicationTests.freshDatabase()
        let arguments = ["--from", "sqlite:" + source, "--to", target]
        let run = try Run.start(arguments + ["--progress-seconds", "0"], directory: directory)
        let started = Date()
        while !run.errors.contains(kind == "sqlite" ? "pages" : "rows/s"), run.process.isRunning, Date().timeIntervalSince(started) < 60 {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(run.process.isRunning, "the copy ended before it could be killed: \(run.errors)")
        kill(run.process.processIdentifier, SIGKILL)
        _ = run.finish()

        let store: any TabStore = kind == "sqlite" ? try SQLiteStore(path: directory + "/copy.sqlite") : try PostgresStore(url: target)
        #expect(try await store.currentLayouts().isEmpty, "an interrupted copy left rows in the target")
        let again = try Run.start(arguments, directory: directory)
        #expect(again.finish() == 0, "\(again.errors)")
        #expect(try await store.currentLayouts().count == 3_000)
    }
}

/// The lines the sqlite3 shell prints for `command` on the database at `path`.
func sqliteShell(_ path: String, _ command: String) throws -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = [path, command]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "sqlite3 \(command)")
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}
