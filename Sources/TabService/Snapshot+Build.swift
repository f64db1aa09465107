import HashTreeCollections
import Logging
import TabLayout
import TabStore

extension Snapshot {
    /// A snapshot of every current layout and strings table. Sources that no longer compile are logged
    /// and left out (their accounts fall back to `default`).
    static func build(layouts: [StoredVersion], strings: [StoredStrings], budget: VariantBudget, logger: Logger) -> Snapshot {
        var tables: [String: StringsTable] = [:]
        var stringsRecords: [String: StoredStrings] = [:]
        for record in strings {
            do {
                tables[record.locale] = try StringsTable.read(record.source)
                stringsRecords[record.locale] = record
            } catch {
                logger.error("strings table \(record.locale) v\(record.version) no longer reads: \(error)")
            }
        }
        var documents: TreeDictionary<String, LayoutDocument> = [:]
        var records: TreeDictionary<String, StoredVersion> = [:]
        var extendedBy: TreeDictionary<String, Set<String>> = [:]
        for record in layouts where !record.deleted {
            do {
                let document = try LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
                documents[record.account] = document
                records[record.account] = record
                if let base = document.extends { extendedBy[base, default: []].insert(record.account) }
            } catch {
                logger.error("layout \(record.account) v\(record.version) no longer reads: \(error)")
            }
        }
        let base = Snapshot(
            entries: [:], documents: documents, records: records, extendedBy: extendedBy, globalStrings: tables,
            stringsRecords: stringsRecords, budget: budget)
        return base.rebuilding(documents.keys, logger: logger)
    }

    /// This snapshot with `accounts`' entries compiled anew from `documents` (others kept).
    func rebuilding(_ accounts: some Sequence<String>, logger: Logger) -> Snapshot {
        var entries = self.entries
        let stringsModified = stringsRecords.values.reduce(0) { max($0, $1.createdAtMillis) }
        for account in accounts {
            guard let document = documents[account], let record = records[account] else {
                entries[account] = nil
                continue
            }
            do {
                let resolved = try resolve(account, version: record.version, document: document, strict: false)
                var modified = max(record.createdAtMillis, stringsModified)
                for base in resolved.bases { modified = max(modified, records[base]?.createdAtMillis ?? 0) }
                entries[account] = LayoutEntry(
                    resolved: resolved, globalStrings: globalStrings, modifiedMillis: modified, budget: budget)
            } catch {
                logger.error("layout \(account) v\(record.version) does not compile against the current store: \(error)")
                entries[account] = nil
            }
        }
        return Snapshot(
            entries: entries, documents: documents, records: records, extendedBy: extendedBy, globalStrings: globalStrings,
            stringsRecords: stringsRecords, budget: budget)
    }

    /// This snapshot after `record` (a new version or a deletion) was committed: the account and every
    /// layout that extends it (before or after the change) are compiled anew. An older record than the one
    /// held is ignored.
    func applying(_ record: StoredVersion, document: LayoutDocument?, logger: Logger) -> Snapshot {
        let account = record.account
        if let held = records[account], held.version >= record.version { return self }
        var documents = self.documents
        var records = self.records
        var extendedBy = self.extendedBy
        let affectedBefore = dependents(of: account)
        if let previous = documents[account]?.extends {
            extendedBy[previous]?.remove(account)
            if extendedBy[previous]?.isEmpty == true { extendedBy[previous] = nil }
        }
        if record.deleted {
            documents[account] = nil
            records[account] = nil
        } else if let document {
            documents[account] = document
            records[account] = record
            if let base = document.extends { extendedBy[base, default: []].insert(account) }
        }
        let next = Snapshot(
            entries: entries, documents: documents, records: records, extendedBy: extendedBy, globalStrings: globalStrings,
            stringsRecords: stringsRecords, budget: budget)
        return next.rebuilding(affectedBefore.union(next.dependents(of: account)).union([account]), logger: logger)
    }

    /// This snapshot after a strings table was committed: every layout is compiled anew.
    func applying(strings record: StoredStrings, table: StringsTable, logger: Logger) -> Snapshot {
        if let held = stringsRecords[record.locale], held.version >= record.version { return self }
        var tables = globalStrings
        var stringsRecords = self.stringsRecords
        tables[record.locale] = table
        stringsRecords[record.locale] = record
        let next = Snapshot(
            entries: [:], documents: documents, records: records, extendedBy: extendedBy, globalStrings: tables,
            stringsRecords: stringsRecords, budget: budget)
        return next.rebuilding(documents.keys, logger: logger)
    }
}

/// The source format a stored or uploaded content type names (binary plists are recognised by their magic).
func sourceFormat(_ contentType: String) -> SourceFormat? {
    switch mediaType(contentType) {
    case "application/json": .json
    case "application/x-plist", "application/xml", "text/xml": .xmlPlist
    case "application/octet-stream": .binaryPlist
    default: nil
    }
}

/// `Application/JSON; charset=utf-8` → `application/json`.
func mediaType(_ contentType: String) -> String {
    String(contentType.prefix { $0 != ";" }).trimmingCharacters(in: " \t").lowercased()
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        guard let first = firstIndex(where: { !characters.contains($0) }), let last = lastIndex(where: { !characters.contains($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
