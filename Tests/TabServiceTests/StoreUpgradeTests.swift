import Foundation
import TabServiceTestSupport
import TabStorePostgres
import TabTestSupport
import Testing

@testable import TabStore

/// Stores written by earlier releases (`Fixtures/stores/<release>/`, made by `scripts/make-store-fixtures` with that
/// release's binary) open in today's `tabserver serve`, upgrade in place, and serve every version with the tags the
/// old release gave them.
@Suite(.serialized) struct StoreUpgradeTests {
    static let fixtures = ServiceHarness.repository.appendingPathComponent("Tests/TabServiceTests/Fixtures/stores")
    static var binaryBuilt: Bool { FileManager.default.isExecutableFile(atPath: ServerProcess.binary) }

    /// Every release folder; an empty or missing folder fails the test rather than passing it with nothing checked.
    static func releases() throws -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: fixtures.path)) ?? []
        let releases = names.sorted().map { fixtures.appendingPathComponent($0) }
            .filter { FileManager.default.fileExists(atPath: $0.appendingPathComponent("expected.json").path) }
        try #require(!releases.isEmpty, "no store fixtures under \(fixtures.path)")
        return releases
    }

    struct Expected: Decodable {
        struct Account: Decodable {
            var versions: [[JSONScalar]]
            var tabsETag: String
        }
        var accounts: [String: Account]
        var strings: [String: String]
    }

    /// A cell of expected.json's version rows: a number, a string, a boolean or null.
    enum JSONScalar: Decodable, Equatable {
        case number(Int), string(String), bool(Bool), null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int.self) {
                self = .number(value)
            } else {
                self = .string(try container.decode(String.self))
            }
        }
    }

    struct VersionList: Decodable {
        struct Row: Decodable {
            var version: Int
            var etag: String
            var author: String?
            var message: String?
            var deleted: Bool
        }
        var versions: [Row]
    }

    /// What a server on the upgraded store answers, in expected.json's shape, compared account by account.
    func expectServes(_ expected: Expected, port: UInt16, release: String) async throws {
        let client = HTTPTestClient(port: port)
        let accounts = try await client.send("GET", "/v1/accounts?limit=1000", headers: ServiceHarness.admin())
        let listed = try #require(accounts.json?["accounts"] as? [[String: Any]]).compactMap { $0["account"] as? String }
        #expect(Set(listed) == Set(expected.accounts.keys), "\(release): the accounts")
        for (account, want) in expected.accounts {
            let versions = try await client.send(
                "GET", "/v1/accounts/\(account)/layout/versions?limit=1000", headers: ServiceHarness.admin())
            let rows = try JSONDecoder().decode(VersionList.self, from: Data(versions.body)).versions
            let got: [[JSONScalar]] = rows.map { row in
                [
                    .number(row.version), .string(row.etag), row.author.map(JSONScalar.string) ?? .null,
                    row.message.map(JSONScalar.string) ?? .null, .bool(row.deleted),
                ]
            }
            #expect(got == want.versions, "\(release) \(account): versions and tags")
            let tabs = try await client.send("GET", "/v1/accounts/\(account)/tabs", headers: [("Accept-Language", "en")])
            #expect(tabs.header("ETag") == want.tabsETag, "\(release) \(account): the client plane's ETag")
        }
        for (locale, etag) in expected.strings {
            let strings = try await client.send("GET", "/v1/strings/\(locale)", headers: ServiceHarness.admin())
            #expect(strings.header("ETag") == etag, "\(release) strings \(locale)")
        }
        // The reports' table came with the migration: an app's report is counted in the upgraded store.
        if let account = expected.accounts.keys.sorted().first {
            let report = try await client.send(
                "POST", "/v1/accounts/\(account)/tabs/reports", headers: [("Content-Type", "application/json")],
                body: Array(#"{"installId": "upgraded", "reports": [{"version": 1, "kind": "rendered"}]}"#.utf8))
            #expect(report.status == 202, "\(release): a report counted in the upgraded store: \(report.text)")
        }
    }

    static func expected(_ release: URL) throws -> Expected {
        try JSONDecoder().decode(Expected.self, from: Data(contentsOf: release.appendingPathComponent("expected.json")))
    }

    static func temporaryDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + "upgrade-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test(.enabled(if: StoreUpgradeTests.binaryBuilt))
    func anSQLiteStoreOfEachEarlierReleaseUpgradesInPlaceAndServesTheSameTags() async throws {
        for release in try Self.releases() {
            let directory = try Self.temporaryDirectory()
            let path = directory + "/tabs.sqlite"
            try FileManager.default.copyItem(atPath: release.appendingPathComponent("tabs.sqlite").path, toPath: path)
            let server = try await ServerProcess.start(store: "sqlite:\(path)", directory: directory)
            defer { server.kill9() }
            try await expectServes(try Self.expected(release), port: server.port, release: release.lastPathComponent)
            let applied = try SQLiteConnection(path: path).query("SELECT MAX(version) FROM schema_migrations", []) { $0.int(0) }
            #expect(applied == [StoreSchema.currentVersion], "migrated to this build's schema")
        }
    }

    @Test(.enabled(if: StoreUpgradeTests.binaryBuilt && ReplicationTests.serverURL != nil))
    func aPostgreSQLDumpOfEachEarlierReleaseUpgradesInPlaceAndServesTheSameTags() async throws {
        for release in try Self.releases() {
            let database = try ReplicationTests.freshDatabase()
            let psql = Process()
            psql.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
            psql.arguments = ["-q", "-v", "ON_ERROR_STOP=1", "-f", release.appendingPathComponent("postgres.sql").path, database]
            psql.standardOutput = FileHandle.nullDevice
            try psql.run()
            psql.waitUntilExit()
            try #require(psql.terminationStatus == 0, "psql could not load \(release.lastPathComponent)/postgres.sql")
            let server = try await ServerProcess.start(store: database, directory: try Self.temporaryDirectory())
            defer { server.kill9() }
            try await expectServes(try Self.expected(release), port: server.port, release: release.lastPathComponent)
        }
    }

    @Test
    func anSQLiteStoreWrittenByANewerReleaseIsRefusedNamingBothVersions() throws {
        let path = try Self.temporaryDirectory() + "/tabs.sqlite"
        _ = try SQLiteStore(path: path)
        try SQLiteConnection(path: path).execute("INSERT INTO schema_migrations (version, applied_at_ms) VALUES (99, 0)")
        #expect(throws: StoreError.schemaTooNew(store: 99, binary: StoreSchema.currentVersion)) { try SQLiteStore(path: path) }
        let message = StoreError.schemaTooNew(store: 99, binary: StoreSchema.currentVersion).description
        #expect(message.contains("99") && message.contains("(\(StoreSchema.currentVersion))"))
    }

    @Test(.enabled(if: StoreUpgradeTests.binaryBuilt))
    func serveRefusesANewerStoreAtOnceAndSaysWhy() async throws {
        let directory = try Self.temporaryDirectory()
        let path = directory + "/tabs.sqlite"
        _ = try SQLiteStore(path: path)
        try SQLiteConnection(path: path).execute("INSERT INTO schema_migrations (version, applied_at_ms) VALUES (99, 0)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServerProcess.binary)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--store", "sqlite:\(path)"]
        process.environment = ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "PATH": "/usr/bin:/bin"]
        let log = directory + "/serve.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // A store that waiting cannot fix ends the process; a retry loop would keep it running.
        for _ in 0..<400 where process.isRunning { try await Task.sleep(for: .milliseconds(25)) }
        let exited = !process.isRunning
        if !exited { process.terminate() }
        process.waitUntilExit()
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(exited, "serve was still running after 10 s: \(output.suffix(300))")
        #expect(process.terminationStatus != 0)
        #expect(output.contains("version 99") && output.contains("(\(StoreSchema.currentVersion))"), "\(output)")
    }
}
