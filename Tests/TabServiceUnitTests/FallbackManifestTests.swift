import Foundation
import Logging
import TabDelivery
import TabStore
import Testing

@testable import TabService

/// Manifests of accounts without a layout of their own (served `default`'s): any client may make their names up, so
/// the service keeps a bounded number of them, the recently asked, while an account with a layout keeps its own.
@Suite struct FallbackManifestTests {
    static let now = Timestamp(unixMillis: 1_700_000_000_123)

    /// `jack` and `default` with a layout each.
    static func snapshot() -> Snapshot {
        let layouts = SnapshotTests()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return Snapshot.build(
            layouts: [
                layouts.record("jack", version: 1, layouts.layout("home")), layouts.record("default", version: 1, layouts.layout("d")),
            ],
            strings: [], budget: VariantBudget(limit: .max), logger: logger)
    }

    static func account(of kept: KeptManifest?) -> String? {
        guard let body = kept?.manifest.body else { return nil }
        return ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])?["account"] as? String
    }

    @Test func madeUpAccountsKeepAtMostTheFallbackLimitAndAccountsWithALayoutKeepTheirs() throws {
        let snapshot = Self.snapshot()
        let memo = ManifestMemo(fallbackLimit: 100)
        let jack = try #require(memo.manifest(account: "jack", environment: "production", snapshot: snapshot, at: Self.now))
        let hot = try #require(memo.manifest(account: "often-asked", environment: "production", snapshot: snapshot, at: Self.now))
        let firstBody = memo.manifest(account: "made-up-0", environment: "production", snapshot: snapshot, at: Self.now)?.manifest.body
        for number in 0..<1_000 {
            let name = "made-up-\(number)"
            let kept = memo.manifest(account: name, environment: "production", snapshot: snapshot, at: Self.now)
            // Each names its own account (the signature covers it), served by `default`'s layout.
            #expect(Self.account(of: kept) == name && kept?.manifest.owner == "default")
            if number % 10 == 0 {
                #expect(memo.manifest(account: "often-asked", environment: "production", snapshot: snapshot, at: Self.now) === hot)
            }
            #expect(memo.manifest(account: "jack", environment: "production", snapshot: snapshot, at: Self.now) === jack)
        }
        let count = memo.count
        #expect(count.fallback <= 100 && count.fallback >= 50, "\(count)")
        #expect(count.own == 1)
        #expect(memo.manifest(account: "often-asked", environment: "production", snapshot: snapshot, at: Self.now) === hot)
        // One that went is made again: the same bytes.
        let first = memo.manifest(account: "made-up-0", environment: "production", snapshot: snapshot, at: Self.now)
        #expect(first?.manifest.body == firstBody && memo.count.fallback <= 100)
    }

    @Test func anAccountThatGainsALayoutMovesToTheAccountsThatKeepTheirs() throws {
        let layouts = SnapshotTests()
        let before = Self.snapshot()
        let memo = ManifestMemo(fallbackLimit: 10)
        let borrowed = try #require(memo.manifest(account: "newcomer", environment: "production", snapshot: before, at: Self.now))
        #expect(borrowed.manifest.owner == "default" && memo.count == (own: 0, fallback: 1))
        let after = try layouts.applying(before, layouts.record("newcomer", version: 1, layouts.layout("n"))).published(as: 1)
        let own = try #require(memo.manifest(account: "newcomer", environment: "production", snapshot: after, at: Self.now))
        #expect(own.manifest.owner == "newcomer" && memo.count == (own: 1, fallback: 0))
    }

    @Test func aRecentlyUsedTableKeepsItsLimitAndTheValuesUsedAgain() {
        var table = RecentlyUsed<Int>(limit: 4)
        table.insert(-1, for: "kept")
        for number in 0..<100 {
            table.insert(number, for: "k\(number)")
            #expect(table.value(for: "kept") == -1 && table.count <= 4)
        }
        #expect(table.value(for: "kept") == -1 && table.value(for: "k99") == 99 && table.value(for: "k0") == nil)
        table.remove("kept")
        #expect(table.value(for: "kept") == nil)
    }
}
