import HashTreeCollections
import Logging
import TabLayout
import TabStore

extension Snapshot {
    /// A snapshot of every current layout and strings table. Layouts are neither parsed nor resolved here: each is
    /// on its first request (a source that no longer compiles then falls back to `default`, and is logged).
    static func build(
        layouts: [StoredVersion], strings: [StoredStrings], budget: VariantBudget, logger: Logger, vary: String? = nil
    ) -> Snapshot {
        var contents = Contents()
        contents.vary = vary
        contents.logger = logger
        for record in strings {
            do {
                contents.globalStrings[record.locale] = try StringsTable.read(record.source)
                contents.stringsRecords[record.locale] = record
            } catch {
                logger.error("strings table \(record.locale) v\(record.version) no longer reads: \(error)")
            }
        }
        for record in layouts where !record.deleted {
            let lazy = LazyDocument(record: record)
            contents.documents[record.account] = lazy
            if let base = lazy.extends { contents.extendedBy[base, default: []].insert(record.account) }
        }
        return Snapshot(contents, budget: budget).rebuilding(contents.documents.keys, logger: logger)
    }

    /// This snapshot with `accounts`' entries made anew (to be resolved on first request; others kept).
    func rebuilding(_ accounts: some Sequence<String>, logger: Logger) -> Snapshot {
        var contents = self.contents
        for account in accounts {
            contents.entries[account] = documents[account] == nil ? nil : LazyEntry(account: account, extraVary: contents.vary)
            if let served = contents.rollouts[account] { contents.rollouts[account] = served.rebuilt(vary: contents.vary) }
        }
        return Snapshot(contents, budget: budget)
    }

    /// This snapshot after `record` (a new version or a deletion) was committed: the account and every
    /// layout that extends it (before or after the change) are made anew. An older record than the one
    /// held is ignored (nil: nothing changed).
    func applying(_ record: StoredVersion, document: LayoutDocument?, logger: Logger) -> Snapshot? {
        let account = record.account
        let held = self.record(account)
        // A pointer may move back (a rollout of an older version completed); the same version twice is no change.
        if let held, held.version == record.version { return nil }
        var contents = self.contents
        let affectedBefore = dependents(of: account)
        if let previous = documents[account]?.extends {
            contents.extendedBy[previous]?.remove(account)
            if contents.extendedBy[previous]?.isEmpty == true { contents.extendedBy[previous] = nil }
        }
        if record.deleted {
            contents.documents[account] = nil
        } else if let document {
            contents.documents[account] = LazyDocument(record: record, document: document)
            if let base = document.extends { contents.extendedBy[base, default: []].insert(account) }
        } else {
            return nil
        }
        if let held, held.createdAtMillis / 1000 == record.createdAtMillis / 1000 {
            contents.changedTwiceInOneSecond.insert(account)
        } else {
            contents.changedTwiceInOneSecond.remove(account)
        }
        let next = Snapshot(contents, budget: budget)
        return next.rebuilding(affectedBefore.union(next.dependents(of: account)).union([account]), logger: logger)
    }

    /// This snapshot after a strings table was committed: every layout is made anew (resolved again on its next
    /// request; publishing costs one small object per account, no compile). Nil: the table held is as new or newer.
    func applying(strings record: StoredStrings, table: StringsTable, logger: Logger) -> Snapshot? {
        if let held = stringsRecords[record.locale], held.version == record.version { return nil }
        var contents = self.contents
        contents.globalStrings[record.locale] = table
        contents.stringsRecords[record.locale] = record
        // Resolved entries are carried over with the representations the table cannot change (or made anew when the
        // layout's locales change); the others are kept: they resolve against the snapshot they are read from.
        let modified = contents.stringsRecords.mapValues(\.createdAtMillis)
        for (account, lazy) in entries {
            guard let old = lazy.resolved else { continue }
            contents.entries[account] =
                old.replacingStrings(contents.globalStrings, modified: modified, changed: record.locale).map {
                    LazyEntry(account: account, ready: $0, extraVary: contents.vary)
                } ?? LazyEntry(account: account, extraVary: contents.vary)
        }
        for (account, served) in contents.rollouts { contents.rollouts[account] = served.rebuilt(vary: contents.vary) }
        return Snapshot(contents, budget: budget)
    }

    /// The snapshot of `environment` (this one when it is nil or this snapshot's own).
    func environment(_ name: String?) -> Snapshot { name.flatMap { contents.environments[$0] } ?? self }

    /// This snapshot with another environment's snapshot replaced.
    func replacing(environment name: String, with snapshot: Snapshot) -> Snapshot {
        var contents = self.contents
        contents.environments[name] = snapshot
        return Snapshot(contents, budget: budget)
    }

    /// This snapshot stamped with the publication's sequence number.
    func published(as sequence: UInt64) -> Snapshot {
        var contents = self.contents
        contents.sequence = sequence
        return Snapshot(contents, budget: budget)
    }
}

/// `Application/JSON; charset=utf-8` → `application/json`.
func mediaType(_ contentType: String) -> String { SourceFormat.mediaType(contentType) }

/// The source format a stored or uploaded content type names.
func sourceFormat(_ contentType: String) -> SourceFormat? { SourceFormat(contentType: contentType) }

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        guard let first = firstIndex(where: { !characters.contains($0) }), let last = lastIndex(where: { !characters.contains($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
