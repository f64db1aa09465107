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
            account: account, version: version, source: Array(json.utf8), contentType: "application/json",
            etag: "\"\(account)-\(version)\"",
            createdAtMillis: 1_700_000_000_000 + Int64(version), author: nil, message: nil, restoredFrom: nil, deleted: false)
    }

    /// A one-tab layout whose tab id is `id` (lower case: tab ids are).
    func layout(_ id: String, extends base: String? = nil) -> String {
        let extends = base.map { #""extends":"\#($0)","# } ?? ""
        return #"{"schemaVersion":1,\#(extends)"tabs":[{"id":"\#(id)","title":"\#(id)","rootViewController":"V"}]}"#
    }

    func applying(_ snapshot: Snapshot, _ record: StoredVersion) throws -> Snapshot {
        let document = try LayoutSource.parse(record.source, format: .json)
        return snapshot.applying(record, document: document, logger: logger) ?? snapshot
    }

    /// base ← over ← deep, and 200 unrelated accounts.
    func fixture() -> Snapshot {
        var layouts = (0..<200).map { record("acct\($0)", version: 1, layout("t\($0)")) }
        layouts += [
            record("base", version: 1, layout("b")), record("over", version: 1, layout("o", extends: "base")),
            record("deep", version: 1, layout("d", extends: "over")),
        ]
        return Snapshot.build(layouts: layouts, strings: [], budget: VariantBudget(limit: .max), logger: logger)
    }

    @Test func startingParsesAndResolvesNothingUntilAnAccountIsAskedFor() throws {
        var recorded = record("recorded", version: 1, layout("r"))
        recorded.extends = ""  // written by a store that records `extends`: no parse needed to index it
        var broken = record("broken", version: 1, "{not json")
        broken.extends = ""
        let snapshot = Snapshot.build(
            layouts: [recorded, broken, record("default", version: 1, layout("fallback"))], strings: [],
            budget: VariantBudget(limit: .max), logger: logger)
        #expect(snapshot.entries.values.allSatisfy { $0.resolved == nil })
        #expect(snapshot.entry(for: "recorded")?.resolved.tabs.map(\.id) == ["r"])
        #expect(snapshot.entries["recorded"]?.resolved != nil && snapshot.entries["broken"]?.resolved == nil)
        // A source that no longer reads is found out on its first request: the account falls back to default.
        #expect(snapshot.entry(for: "broken")?.resolved.name == "default")
    }

    @Test func aSweepForgetsResolvedEntriesNoRequestUsedAndResolvesThemAgainWhenAsked() throws {
        let snapshot = fixture()
        let first = try #require(snapshot.entry(for: "acct1"))
        #expect(snapshot.entries["acct1"]?.sweep() == 0)  // used since it was resolved: kept
        #expect(snapshot.entries["acct1"]?.resolved === first)
        _ = snapshot.entries["acct1"]?.sweep()  // not used since the previous sweep: forgotten
        #expect(snapshot.entries["acct1"]?.resolved == nil)
        let again = try #require(snapshot.entry(for: "acct1"))
        #expect(again !== first && again.resolved.tabs.map(\.id) == ["t1"])
    }

    @Test func aWriteRecompilesTheAccountAndItsDependentsOnly() throws {
        let before = fixture()
        #expect(before.entries.count == 203)
        #expect(before.dependents(of: "base") == ["over", "deep"])
        let after = try applying(before, record("base", version: 2, layout("b2")))
        for name in ["base", "over", "deep"] { #expect(after.entries[name] !== before.entries[name], "\(name) is recompiled") }
        for i in 0..<200 { #expect(after.entries["acct\(i)"] === before.entries["acct\(i)"], "acct\(i) is shared, not rebuilt") }
        #expect(after.entry(for: "deep")?.resolved.tabs.map(\.id) == ["b2", "o", "d"])
        #expect(before.entry(for: "deep")?.resolved.tabs.map(\.id) == ["b", "o", "d"], "the old snapshot is unchanged")
    }

    @Test func movingAnOverlayToAnotherBaseMovesItsDependency() throws {
        let before = fixture()
        let moved = try applying(before, record("over", version: 2, layout("o", extends: "acct7")))
        #expect(moved.dependents(of: "base").isEmpty)
        #expect(moved.dependents(of: "acct7") == ["over", "deep"])
        #expect(moved.entry(for: "deep")?.resolved.tabs.map(\.id) == ["t7", "o", "d"])
        let rewritten = try applying(moved, record("acct7", version: 2, layout("t7b")))
        #expect(rewritten.entry(for: "deep")?.resolved.tabs.map(\.id) == ["t7b", "o", "d"])
        #expect(rewritten.entries["base"] === moved.entries["base"])
    }

    @Test func aDeletionDropsTheEntryAndItsReverseLinks() throws {
        let before = fixture()
        let deletion = StoredVersion.deletion(
            after: record("deep", version: 1, layout("d", extends: "over")), author: nil, atMillis: 1_700_000_000_002)
        let after = try #require(before.applying(deletion, document: nil, logger: logger))
        #expect(after.entries["deep"] == nil)
        #expect(after.dependents(of: "base") == ["over"])
        #expect(after.extendedBy["over"] == nil)
    }

    @Test func theVersionHeldAgainIsNoChangeAndAnOlderOneIsServed() throws {
        let current = try applying(fixture(), record("base", version: 3, layout("b3")))
        let again = try LayoutSource.parse(record("base", version: 3, layout("b3")).source, format: .json)
        #expect(current.applying(record("base", version: 3, layout("b3")), document: again, logger: logger) == nil)
        // An environment's pointer may move back (a rollout of an older version completed): that version is served.
        let document = try LayoutSource.parse(record("base", version: 2, layout("b2")).source, format: .json)
        let back = try #require(current.applying(record("base", version: 2, layout("b2")), document: document, logger: logger))
        #expect(back.record("base")?.version == 2)
    }

    @Test func aSweepDropsWhatNoRequestUsedSinceTheSweepBefore() throws {
        let budget = VariantBudget(limit: 1)
        let snapshot = Snapshot.build(layouts: [record("one", version: 1, layout("a"))], strings: [], budget: budget, logger: logger)
        let entry = try #require(snapshot.entry(for: "one"))
        let metrics = Metrics()
        // With brotli made at once: a brotli form finished in the background later would change the costs compared.
        func get(_ format: RepresentationFormat) throws -> (Representation, sweep: Bool) {
            try entry.representation(
                VariantKey(locale: 0, platform: 0, versionClass: 0, format: format), platform: nil, appVersion: nil,
                cacheControl: "no-cache",
                metrics: metrics, brotliNow: true)
        }
        let (json, firstSweep) = try get(.json)
        #expect(firstSweep, "past a 1-byte limit, the first insert asks for a sweep")
        let (plist, secondSweep) = try get(.plist)
        #expect(!secondSweep, "a sweep is already asked for")
        #expect(budget.representations == 2 && budget.bytes == json.cost + plist.cost)
        #expect(entry.sweep() == 0, "both were used since they were built")
        _ = try get(.json)  // json used again; plist not
        #expect(entry.sweep() == 1)
        #expect(budget.representations == 1 && budget.bytes == json.cost)
        #expect(try get(.json).0 === json, "the used one is kept")
        budget.sweepFinished()
    }

    @Test func aDroppedSnapshotReturnsItsBytesToTheBudget() throws {
        let budget = VariantBudget(limit: .max)
        var snapshot: Snapshot? = Snapshot.build(
            layouts: [record("one", version: 1, layout("a"))], strings: [], budget: budget, logger: logger)
        _ = try snapshot?.entry(for: "one")?.representation(
            VariantKey(locale: 0, platform: 0, versionClass: 0, format: .json), platform: nil, appVersion: nil, cacheControl: "no-cache",
            metrics: Metrics())
        #expect(budget.representations == 1 && budget.bytes > 0)
        Compressor.queue.sync {}  // the brotli form made in the background has landed (it holds the entry meanwhile)
        snapshot = nil
        #expect(budget.representations == 0 && budget.bytes == 0)
    }
}
