import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A small tmpfs under the store, filled: writes answer 507 saying the disk is full, reads go on, nothing
/// acknowledged is lost, and writes work again once space is freed (the tmpfs grown with `remount`), with no
/// restart. Needs `mount` (root); CI runs as root.
@Suite(.serialized) struct DiskFullTests {
    /// A tmpfs of `megabytes` MiB on a new directory; unmounted by ``unmount()``.
    struct Tmpfs {
        let path: String

        init(megabytes: Int) throws {
            path = NSTemporaryDirectory() + "tmpfs-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try #require(Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path) == 0, "mount tmpfs on \(path)")
        }

        func resize(megabytes: Int) throws {
            try #require(Self.run("/bin/mount", "-o", "remount,size=\(megabytes)m", path) == 0, "remount \(path)")
        }

        func unmount() {
            _ = Self.run("/bin/umount", "-l", path)
            try? FileManager.default.removeItem(atPath: path)
        }

        /// Writes zeros into `name` until the file system refuses (ENOSPC).
        func fill(_ name: String = "filler") {
            let fd = open(path + "/" + name, O_WRONLY | O_CREAT, 0o644)
            defer { close(fd) }
            let chunk = [UInt8](repeating: 0, count: 16 * 1024)
            while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        }

        /// Runs a tool; its exit status (-1 when it cannot be started).
        @discardableResult
        static func run(_ tool: String, _ arguments: String...) -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return -1 }
            process.waitUntilExit()
            return process.terminationStatus
        }

        /// Whether this process may mount a tmpfs (a 1 MiB probe, mounted and unmounted at once).
        static let permitted: Bool = {
            guard let probe = try? Tmpfs(megabytes: 1) else { return false }
            probe.unmount()
            return true
        }()
    }

    static var enabled: Bool { FileManager.default.isExecutableFile(atPath: ServerProcess.binary) && Tmpfs.permitted }
    static let skipReason: Comment = "mount -t tmpfs is not permitted here (it needs root, as in CI): the disk-full tests did not run"

    func put(_ port: UInt16, _ account: String, _ text: String, ifMatch: String?) async throws -> HTTPTestClient.Response {
        var headers = ServiceHarness.admin([("Content-Type", "application/json")])
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        return try await HTTPTestClient(port: port).send("PUT", "/v1/accounts/\(account)/layout", headers: headers, body: document([text]))
    }

    /// Writes until the first refusal (at most `attempts`); returns it and the last acknowledged ETag.
    func writeUntilRefused(_ port: UInt16, etag start: String, attempts: Int = 400) async throws -> (HTTPTestClient.Response?, String) {
        var etag = start
        let filler = String(repeating: "x", count: 4000)
        for i in 0..<attempts {
            let response = try await put(port, "full", "write \(i) \(filler)", ifMatch: etag)
            guard response.status == 200 || response.status == 201, let tag = response.header("ETag") else { return (response, etag) }
            etag = tag
        }
        return (nil, etag)
    }

    /// Fills the disk under a running server; checks the 507, the reads, and a write after space is freed.
    func expectFullDiskAnswers507(port: UInt16, fill: () throws -> Void, free: () throws -> Void) async throws {
        let created = try await put(port, "full", "before", ifMatch: nil)
        #expect(created.status == 201)
        try fill()
        let (refusal, acknowledged) = try await writeUntilRefused(port, etag: try #require(created.header("ETag")))
        let answer = try #require(refusal, "every write was acknowledged on a full disk")
        #expect(answer.status == 507, "\(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        #expect(answer.header("Content-Type") == "application/problem+json")
        #expect((answer.json?["detail"] as? String)?.contains("disk is full") == true)
        #expect(answer.json?["status"] as? Int == 507)

        let read = try await HTTPTestClient(port: port).send("GET", "/v1/accounts/full/layout", headers: ServiceHarness.admin())
        #expect(read.status == 200 && read.header("ETag") == acknowledged, "reads go on, with the last acknowledged version")
        try free()
        let after = try await put(port, "full", "after", ifMatch: acknowledged)
        #expect(after.status == 200, "a write once space is freed: \(after.status) \(String(decoding: after.body, as: UTF8.self))")
    }

    @Test(.enabled(if: DiskFullTests.enabled, DiskFullTests.skipReason))
    func sqliteOnAFullDiskAnswers507AndRecovers() async throws {
        let disk = try Tmpfs(megabytes: 3)
        defer { disk.unmount() }
        let logs = NSTemporaryDirectory()
        let server = try await ServerProcess.start(store: "sqlite:\(disk.path)/tabs.sqlite", directory: logs)
        defer { server.kill9() }
        try await expectFullDiskAnswers507(port: server.port, fill: { disk.fill() }, free: { try disk.resize(megabytes: 16) })
    }

    /// PostgreSQL's `could not extend file` (SQLSTATE 53100): the layouts table moved to a tablespace on a
    /// small tmpfs owned by the server's user.
    @Test(.enabled(if: DiskFullTests.enabled && ReplicationTests.serverURL != nil, DiskFullTests.skipReason))
    func postgresOutOfSpaceAnswers507AndRecovers() async throws {
        let disk = try Tmpfs(megabytes: 2)
        defer { disk.unmount() }
        _ = Tmpfs.run("/bin/chown", "postgres", disk.path)
        let database = try ReplicationTests.freshDatabase()
        let server = try await ServerProcess.start(store: database, directory: NSTemporaryDirectory())
        let space = "t" + UUID().uuidString.prefix(8).lowercased()
        // Before the tmpfs goes: the database and the tablespace are dropped, or the cluster would keep buffers it
        // can never write (every later checkpoint, and so every CREATE DATABASE of other tests, would fail).
        defer {
            server.kill9()
            let serverURL = ReplicationTests.serverURL ?? ""
            let name = String(database[database.index(after: database.lastIndex(of: "/") ?? database.startIndex)...])
            Tmpfs.run("/usr/bin/psql", serverURL, "-q", "-c", "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            Tmpfs.run("/usr/bin/psql", serverURL, "-q", "-c", "DROP TABLESPACE IF EXISTS \(space)")
        }
        try #require(Tmpfs.run("/usr/bin/psql", database, "-q", "-c", "CREATE TABLESPACE \(space) LOCATION '\(disk.path)'") == 0)
        try #require(Tmpfs.run("/usr/bin/psql", database, "-q", "-c", "ALTER TABLE layout_versions SET TABLESPACE \(space)") == 0)
        try await expectFullDiskAnswers507(port: server.port, fill: { disk.fill() }, free: { try disk.resize(megabytes: 16) })
    }
}
