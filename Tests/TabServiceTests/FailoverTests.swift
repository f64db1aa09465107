import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL primary and a streaming standby made with `pg_basebackup -R`, a server on both hosts with
/// `target_session_attrs=read-write`: the primary stops, the standby is promoted, writes come back within 10 s
/// of the promotion without a restart, and reads never stop.
@Suite(.serialized) struct FailoverTests {
    /// One PostgreSQL cluster of the machine's server binaries, run as `postgres` when this process is root (as
    /// scripts/with-postgres does).
    struct Cluster {
        static let binaries: String? = {
            let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
            return versions.sorted { $0.compare($1, options: .numeric) == .orderedAscending }.last.map { "/usr/lib/postgresql/\($0)/bin" }
                .flatMap { FileManager.default.isExecutableFile(atPath: $0 + "/pg_basebackup") ? $0 : nil }
        }()

        let directory: String
        let port: UInt16

        var data: String { directory + "/data" }

        /// Runs a PostgreSQL tool as the clusters' owner; its exit status.
        @discardableResult
        static func run(_ tool: String, _ arguments: [String]) -> Int32 {
            let path = (binaries ?? "") + "/" + tool
            return getuid() == 0 ? spawn("/sbin/runuser", ["-u", "postgres", "--", path] + arguments) : spawn(path, arguments)
        }

        /// posix_spawn and waitpid, output to /dev/null. (Foundation's `Process.waitUntilExit` did not return for
        /// `pg_ctl start`, whose server keeps running in the background.)
        @discardableResult
        static func spawn(_ path: String, _ arguments: [String]) -> Int32 {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            let argv = ([path] + arguments).map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            var pid: pid_t = 0
            guard posix_spawn(&pid, path, &actions, nil, argv, environ) == 0 else { return -1 }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
        }

        static func freePort() -> UInt16 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            return UInt16(bigEndian: address.sin_port)
        }

        init(in parent: String, name: String) throws {
            directory = parent + "/" + name
            port = Self.freePort()
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if getuid() == 0 { Self.runChown(directory) }
        }

        static func runChown(_ path: String) { spawn("/bin/chown", ["-R", "postgres", path]) }

        func initialize() throws {
            try #require(Self.run("initdb", ["-D", data, "-A", "trust", "-U", "tabserver", "-E", "UTF8", "--no-sync"]) == 0, "initdb")
        }

        /// A standby of `primary`, streaming, with `standby.signal` and `primary_conninfo` written by `-R`.
        func cloneStandby(of primary: Cluster) throws {
            try #require(
                Self.run(
                    "pg_basebackup",
                    [
                        "-h", "127.0.0.1", "-p", "\(primary.port)", "-U", "tabserver", "-D", data, "-R", "-X", "stream",
                        "--checkpoint=fast", "--no-sync",
                    ]) == 0,
                "pg_basebackup")
        }

        func start() throws {
            try #require(
                Self.run(
                    "pg_ctl",
                    ["-D", data, "-l", directory + "/log", "-w", "-o", "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1", "start"])
                    == 0, "pg_ctl start on \(port)")
        }

        func stop(_ mode: String = "fast") { Self.run("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]) }

        func promote() throws { try #require(Self.run("pg_ctl", ["-D", data, "-w", "promote"]) == 0, "pg_ctl promote") }

        func createDatabase(_ name: String) throws {
            let status = Self.spawn(
                "/usr/bin/psql", ["postgresql://tabserver@127.0.0.1:\(port)/postgres", "-q", "-c", "CREATE DATABASE \(name)"])
            try #require(status == 0, "CREATE DATABASE")
        }
    }

    static var enabled: Bool {
        Cluster.binaries != nil && FileManager.default.isExecutableFile(atPath: ServerProcess.binary)
            && (getuid() != 0 || getpwnam("postgres") != nil)
    }

    func put(_ port: UInt16, _ title: String, ifMatch: String?) async -> HTTPTestClient.Response? {
        var headers = ServiceHarness.admin([("Content-Type", "application/json")])
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        return try? await HTTPTestClient(port: port).send("PUT", "/v1/accounts/failover/layout", headers: headers, body: document([title]))
    }

    @Test(.enabled(if: FailoverTests.enabled, "needs PostgreSQL's server binaries (Debian's postgresql) and tabserver built"))
    func aPromotedStandbyTakesWritesWithinTenSecondsAndReadsNeverStop() async throws {
        let root = NSTemporaryDirectory() + "failover-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, 0o755)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let primary = try Cluster(in: root, name: "primary")
        let standby = try Cluster(in: root, name: "standby")
        try primary.initialize()
        try primary.start()
        defer { primary.stop("immediate") }
        try primary.createDatabase("tabs")
        try standby.cloneStandby(of: primary)
        try standby.start()
        defer { standby.stop("immediate") }

        let url = "postgresql://tabserver@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/tabs?target_session_attrs=read-write"
        let server = try await ServerProcess.start(store: url, directory: root)
        defer { server.kill9() }
        let created = try #require(await put(server.port, "before", ifMatch: nil))
        #expect(created.status == 201)
        var etag = try #require(created.header("ETag"))

        primary.stop("immediate")
        try standby.promote()
        let promoted = Date()
        var writtenAfter: Double?
        var readFailures = 0
        while Date().timeIntervalSince(promoted) < 15 {
            let read = try? await HTTPTestClient(port: server.port).send("GET", "/v1/accounts/failover/tabs")
            if read?.status != 200 { readFailures += 1 }
            if let answer = await put(server.port, "after", ifMatch: etag), answer.status == 200, let tag = answer.header("ETag") {
                etag = tag
                writtenAfter = Date().timeIntervalSince(promoted)
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let seconds = try #require(writtenAfter, "no write was taken within 15 s of the promotion")
        #expect(seconds <= 10, "the first write after the promotion took \(seconds) s")
        #expect(readFailures == 0, "reads failed \(readFailures) times during the failover")
        let after = try await HTTPTestClient(port: server.port).send("GET", "/v1/accounts/failover/layout", headers: ServiceHarness.admin())
        #expect(after.status == 200 && after.header("ETag") == etag && after.header("Layout-Version") == "2")
    }
}
