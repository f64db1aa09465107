import Compression
import Dispatch
import HashTreeCollections
import HeaderFields
import Logging
import MicroHTTPD
import Synchronization
import TabLayout
import TabPreview
import TabStore

/// Everything the read path needs, immutable; the publisher builds a new one for each change and swaps it in.
///
/// The per-account maps are persistent hash tries: a snapshot after one write shares every untouched
/// account's node with the one before it, so a write costs O(log accounts + dependents), not O(accounts).
final class Snapshot: Sendable {
    /// The snapshot's contents, as one value so that a change copies it, edits what it changes, and builds anew.
    struct Contents: Sendable {
        /// Accounts with a layout of their own (`default` among them when it exists), resolved on first request.
        var entries: TreeDictionary<String, LazyEntry> = [:]
        /// Every account's current document (for resolving overlays), parsed on first use.
        var documents: TreeDictionary<String, LazyDocument> = [:]
        /// The accounts whose document names each account in `extends` (the reverse of `extends`).
        var extendedBy: TreeDictionary<String, Set<String>> = [:]
        var globalStrings: [String: StringsTable] = [:]
        var stringsRecords: [String: StoredStrings] = [:]
        /// Accounts whose current version was committed within the same second as the one before it.
        var changedTwiceInOneSecond: Set<String> = []
        /// The publication that made it: grows by one with every snapshot published.
        var sequence: UInt64 = 0
        /// Rollouts under way in this snapshot's environment, by account.
        var rollouts: [String: ServedRollout] = [:]
        /// The newest change time of each account's latest rollout served here, kept after it ends so that a
        /// manifest's `revision` never goes back when a rollout is rolled back or completed (``Manifest``).
        var rolloutChangedMillis: [String: Int64] = [:]
        /// Request headers every representation varies on besides its layout's own (`Tabs-Environment` when there
        /// is more than one environment).
        var vary: String?
        /// Each account's revoked versions (the same in every environment's snapshot: a revocation holds in all).
        var revoked: [String: RevokedVersions] = [:]
        /// The other environments' snapshots, by name (only in the served environment's, the one published).
        var environments: [String: Snapshot] = [:]
        /// Where resolving reports a layout that no longer compiles.
        var logger = Logger(label: "tabserver.snapshot")
    }

    let contents: Contents
    /// The bound on the representations that entries cache (one for the service, shared by its snapshots).
    let budget: VariantBudget
    /// What its entries are resolved against.
    let context: ResolutionContext

    init(_ contents: Contents, budget: VariantBudget) {
        self.contents = contents
        self.budget = budget
        context = ResolutionContext(contents, budget: budget, logger: contents.logger)
    }

    var entries: TreeDictionary<String, LazyEntry> { contents.entries }
    var documents: TreeDictionary<String, LazyDocument> { contents.documents }
    /// The current record of an account with a layout of its own.
    func record(_ account: String) -> StoredVersion? { contents.documents[account]?.record }
    var extendedBy: TreeDictionary<String, Set<String>> { contents.extendedBy }
    var globalStrings: [String: StringsTable] { contents.globalStrings }
    var stringsRecords: [String: StoredStrings] { contents.stringsRecords }
    var changedTwiceInOneSecond: Set<String> { contents.changedTwiceInOneSecond }
    var sequence: UInt64 { contents.sequence }

    /// The entry that serves `account`: its own, else `default`'s.
    /// The entry that serves `account`: its own, else `default`'s (also when its own no longer compiles).
    func entry(for account: String) -> LayoutEntry? {
        entries[account]?.value(in: context) ?? entries["default"]?.value(in: context)
    }

    /// Accounts whose layout extends `account`, directly or through others.
    func dependents(of account: String) -> Set<String> {
        var result: Set<String> = []
        var frontier = [account]
        while let next = frontier.popLast() {
            for name in extendedBy[next] ?? [] where name != account && result.insert(name).inserted {
                frontier.append(name)
            }
        }
        return result
    }

    /// Resolves `account`'s document against this snapshot's documents.
    func resolve(_ account: String, version: Int?, document: LayoutDocument, strict: Bool) throws(LayoutError) -> ResolvedLayout {
        try LayoutResolver.resolve(name: account, version: version, document: document, strict: strict) { documents[$0]?.document }
    }
}
