import Synchronization
import TabStore

/// The versions each account's environments served before (``RolloutStore/servedVersions(account:)``), for
/// `…/tabs?version=N` of a version no environment serves any more and for a declared build that can open none of the
/// current tabs (it gets the newest earlier version it can open whole). Read from the store on the first such request
/// and kept until the next publication (whose pointer move may add a version), for at most ``capacity`` accounts: the
/// read path reads the store only on a miss of this cache, never for the versions served now.
final class ServedHistory: Sendable {
    /// What is known of one account.
    struct Known: Sendable {
        /// Every version an environment served, newest first.
        let versions: [ServedVersion]
        /// The versions read from the store so far (nil: not a version any environment served, or deleted).
        var entries: [Int: LazyEntry?] = [:]

        /// Whether an environment (any when nil) served `version`.
        func served(_ version: Int, in environment: String? = nil) -> Bool {
            versions.contains { $0.version == version && (environment == nil || $0.environment == environment) }
        }
    }

    /// What a lookup found without the store.
    enum Lookup {
        /// The store must be read first (``ServedHistory/read(_:version:snapshot:from:metrics:)``).
        case unknown
        /// The version's entry, resolved in the snapshot; nil when no environment served it (a draft) or it no
        /// longer resolves.
        case known(LayoutEntry?)
    }

    private struct State {
        var sequence: UInt64 = 0
        var accounts: [String: Known] = [:]
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 10_000) { self.capacity = capacity }

    /// What is known of `account` as of `snapshot`'s publication; nil when it must be read from the store.
    func known(_ account: String, in snapshot: Snapshot) -> Known? {
        state.withLock { $0.sequence == snapshot.sequence ? $0.accounts[account] : nil }
    }

    /// `account`'s version `version` as of `snapshot`, when the cache knows it: nil unless `environment` served it
    /// (pointed at it, or a rollout of it served it), whatever other environments did.
    func lookup(_ account: String, version: Int, in snapshot: Snapshot, environment: String) -> Lookup {
        guard let known = known(account, in: snapshot) else { return .unknown }
        guard known.served(version, in: environment) else { return .known(nil) }
        guard let read = known.entries[version] else { return .unknown }
        return .known(read?.value(in: snapshot.context))
    }

    /// Keeps what was read of `account` for `snapshot`'s publication (an older publication's is dropped).
    func remember(_ account: String, _ known: Known, for snapshot: Snapshot) {
        state.withLock { state in
            if state.sequence != snapshot.sequence {
                guard snapshot.sequence > state.sequence else { return }
                state = State(sequence: snapshot.sequence)
            }
            if state.accounts[account] == nil, state.accounts.count >= capacity { state.accounts.removeAll(keepingCapacity: true) }
            state.accounts[account] = known
        }
    }
}

extension ServedHistory {
    /// Reads from `store` into this cache the versions `account`'s environments served and, when asked, the record of
    /// `version` (when one of them); each store read counted in `metrics`.
    func read(_ account: String, version: Int?, snapshot: Snapshot, from store: any TabStore, metrics: Metrics) async throws(StoreError) {
        var found: Known
        if let cached = known(account, in: snapshot) {
            found = cached
        } else {
            metrics.storeOperations.add()
            found = Known(versions: try await store.servedVersions(account: account))
        }
        if let version, found.entries[version] == nil {
            var entry: LazyEntry?
            if found.served(version) {
                metrics.storeOperations.add()
                if let record = try await store.version(account: account, number: version), !record.deleted {
                    entry = LazyEntry(account: account, own: LazyDocument(record: record))
                }
            }
            found.entries[version] = .some(entry)
        }
        remember(account, found, for: snapshot)
    }
}
