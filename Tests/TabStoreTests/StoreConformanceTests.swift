import Foundation
import Synchronization
import TabStorePostgres
import TabTime
import Testing

@testable import TabStore

/// The store contract, run against every backend this machine has: PostgreSQL where
/// `TABSERVER_TEST_POSTGRES_URL` names a server (`scripts/with-postgres` starts one; CI always does).
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case memory, sqlite, postgres

    var testDescription: String { rawValue }

    static var available: [Backend] { PostgresTestDatabase.serverURL == nil ? [.memory, .sqlite] : allCases }

    /// A new, empty store of this kind, dating its records by `clock`.
    func open(clock: TimeSource = .system) throws -> any TabStore {
        switch self {
        case .memory: MemoryStore(clock: clock)
        case .sqlite: try SQLiteStore(path: temporaryPath("store") + "/tabs.sqlite", clock: clock)
        case .postgres: try PostgresStore(url: try PostgresTestDatabase.create(), clock: clock)
        }
    }
}

/// Fresh databases on the test server, one per test.
enum PostgresTestDatabase {
    static var serverURL: String? { ProcessInfo.processInfo.environment["TABSERVER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } }

    /// The URL of a new, empty database.
    static func create() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        return try PostgresStore.createDatabase(serverURL: try #require(serverURL), name: name)
    }
}

func temporaryPath(_ prefix: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func write(_ account: String, _ text: String, _ precondition: WritePrecondition, message: String? = nil) -> LayoutWrite {
    LayoutWrite(
        account: account, source: Array(text.utf8), contentType: "application/json", precondition: precondition, author: "tester",
        message: message)
}

@Suite struct StoreConformanceTests {
    @Test(arguments: Backend.available)
    func createsWithIfNoneMatchStarOnce(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "{}", .ifNoneMatchAny))
        #expect(first.version == 1 && first.account == "a" && first.source == Array("{}".utf8))
        await #expect(throws: StoreError.preconditionFailed(current: first.etag)) {
            try await store.append(write("a", "{ }", .ifNoneMatchAny))
        }
    }

    @Test(arguments: Backend.available)
    func writeToExistingNeedsMatchingIfMatch(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("a", "1", .none))
        await #expect(throws: StoreError.preconditionRequired) { try await store.append(write("a", "2", .none)) }
        await #expect(throws: StoreError.preconditionFailed(current: first.etag)) {
            try await store.append(write("a", "2", .ifMatch(["\"stale\""])))
        }
        let second = try await store.append(write("a", "2", .ifMatch([first.etag]), message: "second"))
        #expect(second.version == 2 && second.etag != first.etag && second.message == "second")
        let wildcard = try await store.append(write("a", "3", .ifMatch(["*"])))
        #expect(wildcard.version == 3)
        #expect(try await store.latest(account: "a") == wildcard)
    }

    @Test(arguments: Backend.available)
    func versionsAreKeptNewestFirstAndReadable(backend: Backend) async throws {
        let store = try backend.open()
        var etag = try await store.append(write("h", "v1", .none)).etag
        for i in 2...4 { etag = try await store.append(write("h", "v\(i)", .ifMatch([etag]))).etag }
        let versions = try await store.versions(account: "h")
        #expect(versions.map(\.version) == [4, 3, 2, 1])
        #expect(try await store.version(account: "h", number: 2)?.source == Array("v2".utf8))
        #expect(try await store.version(account: "h", number: 9) == nil)
        #expect(try await store.versions(account: "nobody").isEmpty)
    }

    @Test(arguments: Backend.available)
    func deleteAppendsARecordAndFreesTheName(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.append(write("d", "x", .none))
        await #expect(throws: StoreError.preconditionFailed(current: first.etag)) {
            try await store.delete(account: "d", precondition: .ifMatch(["\"old\""]), author: nil)
        }
        let deletion = try await store.delete(account: "d", precondition: .ifMatch([first.etag]), author: "ops")
        #expect(deletion.deleted && deletion.version == 2)
        #expect(try await store.currentLayouts().contains { $0.account == "d" } == false)
        await #expect(throws: StoreError.notFound) { try await store.delete(account: "d", precondition: .ifMatch(["*"]), author: nil) }
        let again = try await store.append(write("d", "y", .none))
        #expect(again.version == 3)
        #expect(try await store.versions(account: "d").map(\.deleted) == [false, true, false])
    }

    @Test(arguments: Backend.available)
    func currentLayoutsListsLatestOfEachAccount(backend: Backend) async throws {
        let store = try backend.open()
        let b1 = try await store.append(write("b", "1", .none))
        _ = try await store.append(write("a", "1", .none))
        _ = try await store.append(write("b", "2", .ifMatch([b1.etag])))
        let current = try await store.currentLayouts()
        #expect(current.map(\.account) == ["a", "b"])
        #expect(current.map(\.version) == [1, 2])
    }

    @Test(arguments: Backend.available)
    func stringsTablesAreVersionedWithPreconditions(backend: Backend) async throws {
        let store = try backend.open()
        let first = try await store.appendStrings(
            locale: "fr", source: Array("\"A\"=\"a\";".utf8), contentType: "text/plain", precondition: .none, author: nil)
        await #expect(throws: StoreError.preconditionRequired) {
            try await store.appendStrings(locale: "fr", source: [], contentType: "text/plain", precondition: .none, author: nil)
        }
        let second = try await store.appendStrings(
            locale: "fr", source: Array("{}".utf8), contentType: "application/json", precondition: .ifMatch([first.etag]), author: nil)
        #expect(second.version == 2)
        #expect(try await store.currentStrings() == [second])
    }

    @Test(arguments: Backend.available)
    func ofSixteenRacingWritersOnOneTagExactlyOneWins(backend: Backend) async throws {
        let store = try backend.open()
        let base = try await store.append(write("race", "0", .none))
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for i in 1...16 {
                group.addTask {
                    (try? await store.append(write("race", "\(i)", .ifMatch([base.etag])))) != nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        #expect(try await store.versions(account: "race").map(\.version) == [2, 1])
    }

    /// The delete-versus-extends race is decided in the store's transaction, whatever the caller checked before.
    @Test(arguments: Backend.available)
    func aLayoutThatIsExtendedCannotBeDeletedAndNothingExtendsAMissingBase(backend: Backend) async throws {
        let store = try backend.open()
        let base = try await store.append(write("base", "b1", .ifNoneMatchAny))
        var child = write("child", "c1", .ifNoneMatchAny)
        child.extends = "base"
        _ = try await store.append(child)
        await #expect(throws: StoreError.extended(by: ["child"])) {
            try await store.delete(account: "base", precondition: .ifMatch([base.etag]), author: "t")
        }
        var orphan = write("orphan", "o1", .ifNoneMatchAny)
        orphan.extends = "nobody"
        await #expect(throws: StoreError.missingBase("nobody")) { try await store.append(orphan) }
        // Once the child extends nothing, the base can go; then nothing may extend it.
        let latestChild = try #require(try await store.latest(account: "child"))
        _ = try await store.append(write("child", "c2", .ifMatch([latestChild.etag])))
        _ = try await store.delete(account: "base", precondition: .ifMatch([base.etag]), author: "t")
        var late = write("late", "l1", .ifNoneMatchAny)
        late.extends = "base"
        await #expect(throws: StoreError.missingBase("base")) { try await store.append(late) }
    }

    @Test func aStoreCallThatOutlivesItsDeadlineFailsWithoutWaitingForIt() async throws {
        let executor = StoreExecutor(label: "test.slow", deadlineSeconds: 0.2)
        let finished = Flag()
        await #expect(throws: StoreError.timedOut(seconds: 0.2)) {
            try await executor.run { () throws(StoreError) -> Int in
                sleep(3)
                finished.set()
                return 1
            }
        }
        #expect(!finished.isSet, "the caller waited for the blocked call instead of its deadline")
    }

    @Test func sqliteKeepsEverythingAcrossReopenAndPassesItsIntegrityCheck() async throws {
        let path = temporaryPath("reopen") + "/tabs.sqlite"
        var etag = ""
        do {
            let store = try SQLiteStore(path: path)
            etag = try await store.append(write("p", "persisted", .none, message: "m")).etag
        }
        let reopened = try SQLiteStore(path: path)
        let latest = try #require(try await reopened.latest(account: "p"))
        #expect(latest.etag == etag && latest.source == Array("persisted".utf8) && latest.message == "m" && latest.author == "tester")
        #expect(reopened.integrityCheck())
    }

    @Test func sqliteRacesAcrossConnectionsStillHaveOneWinner() async throws {
        let path = temporaryPath("two") + "/tabs.sqlite"
        let one = try SQLiteStore(path: path)
        let two = try SQLiteStore(path: path)
        let base = try await one.append(write("x", "0", .none))
        async let a = try? one.append(write("x", "a", .ifMatch([base.etag])))
        async let b = try? two.append(write("x", "b", .ifMatch([base.etag])))
        let results = await [a, b]
        #expect(results.compactMap { $0 }.count == 1)
    }

    @Test(.enabled(if: PostgresTestDatabase.serverURL != nil))
    func postgresRacesAcrossConnectionsHaveOneWinnerAndAnnounceOtherStoresChanges() async throws {
        let url = try PostgresTestDatabase.create()
        let one = try PostgresStore(url: url)
        let two = try PostgresStore(url: url)
        let seen = Mutex<[StoreChange]>([])
        two.watch { change in seen.withLock { $0.append(change) } }
        defer { two.stopWatching() }
        try await Task.sleep(for: .milliseconds(300))
        let base = try await one.append(write("x", "0", .none))
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for (i, store) in [one, two, one, two, one, two, one, two].enumerated() {
                group.addTask { (try? await store.append(write("x", "\(i)", .ifMatch([base.etag])))) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        // `two` hears of `one`'s commits only: its own are in its publisher already. Writer i used store
        // [one, two][i % 2] and wrote the text "i", so the winner's text says whose commit it was.
        let winner = try #require(try await one.latest(account: "x"))
        let ownWin = Int(String(decoding: winner.source, as: UTF8.self)).map { $0 % 2 == 1 } ?? false
        let expected = ownWin ? 1 : 2
        for _ in 0..<50 where seen.withLock({ $0.count }) < expected { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.withLock { $0.filter { if case .layout(account: "x", _) = $0 { true } else { false } }.count } == expected)
    }

    @Test func unknownStoreURLsAreRefused() {
        #expect(throws: StoreError.unsupportedURL("redis://x")) { try openStore(url: "redis://x") }
    }
}

/// A flag set from another thread.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
