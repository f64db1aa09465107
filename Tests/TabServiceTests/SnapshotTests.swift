import Logging
import TabLayout
import TabStore
import Testing

@testable import TabService

/// What a write recompiles: the account and the layouts that extend it, and nothing else.
@Suite struct SnapshotTests {
    let logger = Logger(label: "snapshot-tests")

    func record(_ account: String, version: Int, _ json: String) -> StoredVersion {
        StoredVersion(
            account: account, version: version, source: Array(json.utf8), contentType: "application/json", etag: "\"\(account)-\(version)\"",
            createdAtMillis: 1_700_000_000_000 + Int64(version), author: nil, message: nil, restoredFrom: nil, deleted: false)
    }

    /// A one-tab layout whose tab id is `id` (lower case: tab ids are).
    func layout(_ id: String, extends base: String? = nil) -> String {
        let extends = base.map { #""extends":"\#($0)","# } ?? ""
        return #"{"schemaVersion":1,\#(extends)"tabs":[{"id":"\#(id)","title":"\#(id)","rootViewController":"V"}]}"#
    }

    func applying(_ snapshot: Snapshot, _ record: StoredVersion) throws -> Snapshot {
        let document = try LayoutSource.parse(record.source, format: .json)
        return snapshot.applying(record, document: document, logger: logger)
    }

    /// base ← over ← deep, and 200 unrelated accounts.
    func fixture() -> Snapshot {
        var layouts = (0..<200).map { record("acct\($0)", version: 1, layout("t\($0)")) }
        layouts += [
            record("base", version: 1, layout("b")), record("over", version: 1, layout("o", extends: "base")),
            record("deep", version: 1, layout("d", extends: "over")),
        ]
        return Snapshot.build(layouts: layouts, strings: [], logger: logger)
    }

    @Test func aWriteRecompilesTheAccountAndItsDependentsOnly() throws {
        let before = fixture()
        #expect(before.entries.count == 203)
        #expect(before.dependents(of: "base") == ["over", "deep"])
        let after = try applying(before, record("base", version: 2, layout("b2")))
        for name in ["base", "over", "deep"] { #expect(after.entries[name] !== before.entries[name], "\(name) is recompiled") }
        for i in 0..<200 { #expect(after.entries["acct\(i)"] === before.entries["acct\(i)"], "acct\(i) is shared, not rebuilt") }
        #expect(after.entries["deep"]?.resolved.tabs.map(\.id) == ["b2", "o", "d"])
        #expect(before.entries["deep"]?.resolved.tabs.map(\.id) == ["b", "o", "d"], "the old snapshot is unchanged")
    }

    @Test func movingAnOverlayToAnotherBaseMovesItsDependency() throws {
        let before = fixture()
        let moved = try applying(before, record("over", version: 2, layout("o", extends: "acct7")))
        #expect(moved.dependents(of: "base").isEmpty)
        #expect(moved.dependents(of: "acct7") == ["over", "deep"])
        #expect(moved.entries["deep"]?.resolved.tabs.map(\.id) == ["t7", "o", "d"])
        let rewritten = try applying(moved, record("acct7", version: 2, layout("t7b")))
        #expect(rewritten.entries["deep"]?.resolved.tabs.map(\.id) == ["t7b", "o", "d"])
        #expect(rewritten.entries["base"] === moved.entries["base"])
    }

    @Test func aDeletionDropsTheEntryAndItsReverseLinks() throws {
        let before = fixture()
        let deletion = StoredVersion.deletion(after: record("deep", version: 1, layout("d", extends: "over")), author: nil)
        let after = before.applying(deletion, document: nil, logger: logger)
        #expect(after.entries["deep"] == nil)
        #expect(after.dependents(of: "base") == ["over"])
        #expect(after.extendedBy["over"] == nil)
    }

    @Test func anOlderRecordThanTheOneHeldIsIgnored() throws {
        let current = try applying(fixture(), record("base", version: 3, layout("b3")))
        let stale = try applying(current, record("base", version: 2, layout("b2")))
        #expect(stale === current)
    }
}
