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

/// An account's current document, parsed on first use (start-up reads every record, but parses none).
final class LazyDocument: Sendable {
    let record: StoredVersion
    private let parsed: Mutex<LayoutDocument??>

    /// A record whose source is parsed when first needed.
    init(record: StoredVersion) {
        self.record = record
        parsed = Mutex(nil)
    }

    /// A record whose document is already parsed (a write parses it to validate it).
    init(record: StoredVersion, document: LayoutDocument) {
        self.record = record
        parsed = Mutex(.some(document))
    }

    /// The document; nil when the stored source no longer reads.
    var document: LayoutDocument? {
        if let known = parsed.withLock({ $0 }) { return known }
        let document = try? LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
        parsed.withLock { $0 = .some(document) }
        return document
    }

    /// The account it extends: recorded by the store for versions written since it recorded it (`""`: none),
    /// else read from the source.
    var extends: String? {
        if let recorded = record.extends { return recorded.isEmpty ? nil : recorded }
        return document?.extends
    }
}

/// What resolving an account needs from the snapshot it was published in: one per publication, shared by the
/// entries it made (an entry kept by a later snapshot was not affected by its change, so its inputs are the same).
final class ResolutionContext: Sendable {
    let documents: TreeDictionary<String, LazyDocument>
    let globalStrings: [String: StringsTable]
    let stringsModified: [String: Int64]
    let changedTwiceInOneSecond: Set<String>
    let budget: VariantBudget
    let logger: Logger
    /// ``Snapshot/Contents/vary``.
    let vary: String?
    /// ``Snapshot/Contents/revoked``.
    let revoked: [String: RevokedVersions]

    init(_ contents: Snapshot.Contents, budget: VariantBudget, logger: Logger) {
        vary = contents.vary
        revoked = contents.revoked
        documents = contents.documents
        globalStrings = contents.globalStrings
        stringsModified = contents.stringsRecords.mapValues(\.createdAtMillis)
        changedTwiceInOneSecond = contents.changedTwiceInOneSecond
        self.budget = budget
        self.logger = logger
    }
}

/// An account's layout ready to serve, resolved on its first request and kept until a sweep finds it unused
/// (1,000,000 accounts start in seconds: nothing is parsed or resolved before it is asked for). It is resolved against
/// the snapshot it is read from (``value(in:)``), so a snapshot after a change keeps every entry the change did not
/// affect, resolved or not, without making it anew.
final class LazyEntry: Sendable {
    let account: String
    /// The version served in place of the account's current one (a rollout's candidate), nil: the current one.
    private let own: LazyDocument?
    /// Request headers the representations vary on besides the layout's own (`X-Install-Id` during a rollout).
    private let extraVary: String?
    private let state = Mutex<State>(.unresolved)
    private let recentlyUsed = Atomic<Bool>(true)

    enum State {
        case unresolved
        case ready(LayoutEntry)
        /// The source no longer reads or resolves against the store (the account falls back to `default`).
        case failed
    }

    init(account: String, own: LazyDocument? = nil, extraVary: String? = nil) {
        self.account = account
        self.own = own
        self.extraVary = extraVary
    }

    /// An entry resolved already (a strings table changed: what the layout resolves to did not).
    init(account: String, ready entry: LayoutEntry, extraVary: String?) {
        self.account = account
        self.own = nil
        self.extraVary = extraVary
        state.withLock { $0 = .ready(entry) }
    }

    /// The resolved entry (resolving it now against `context`, the snapshot's it is read from, on first use), nil when
    /// it cannot be resolved.
    func value(in context: ResolutionContext) -> LayoutEntry? {
        if !recentlyUsed.load(ordering: .relaxed) { recentlyUsed.store(true, ordering: .relaxed) }
        switch state.withLock({ $0 }) {
        case .ready(let entry): return entry
        case .failed: return nil
        case .unresolved: break
        }
        let built = resolve(context)
        return state.withLock { state in
            switch state {
            case .ready(let raced): return raced
            case .failed: return nil
            case .unresolved:
                state = built.map { .ready($0) } ?? .failed
                return built
            }
        }
    }

    /// The entry if it was resolved (for sweeping; never resolves).
    var resolved: LayoutEntry? {
        if case .ready(let entry) = state.withLock({ $0 }) { return entry }
        return nil
    }

    private func resolve(_ context: ResolutionContext) -> LayoutEntry? {
        guard let lazy = own ?? context.documents[account], let document = lazy.document else {
            context.logger.error("layout \(account) no longer reads")
            return nil
        }
        let record = lazy.record
        do {
            let resolved = try LayoutResolver.resolve(name: account, version: record.version, document: document, strict: false) {
                context.documents[$0]?.document
            }
            var modified = record.createdAtMillis
            for base in resolved.bases { modified = max(modified, context.documents[base]?.record.createdAtMillis ?? 0) }
            return LayoutEntry(
                resolved: resolved, globalStrings: context.globalStrings, layoutModifiedMillis: modified,
                stringsModifiedMillis: context.stringsModified, changedTwiceInOneSecond: context.changedTwiceInOneSecond.contains(account),
                budget: context.budget, extraVary: extraVary, revokedHeader: context.revoked[account]?.header)
        } catch {
            context.logger.error("layout \(account) v\(record.version) does not compile against the current store: \(error)")
            return nil
        }
    }

    /// Drops what no request used since the previous sweep: its variants, and the resolved entry itself when it
    /// was not asked for at all (resolved again on its next request). The number of representations dropped.
    func sweep() -> Int {
        guard let entry = resolved else { return 0 }
        if !recentlyUsed.exchange(false, ordering: .relaxed) {
            state.withLock { $0 = .unresolved }
            return entry.dropAll()
        }
        return entry.sweep()
    }
}
