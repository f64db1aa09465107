import Logging
import TabLayout
import TabStore

extension Snapshot {
    /// A snapshot of every current layout and strings table. Sources that no longer compile are logged
    /// and left out (their accounts fall back to `default`).
    static func build(layouts: [StoredVersion], strings: [StoredStrings], logger: Logger) -> Snapshot {
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
        var documents: [String: LayoutDocument] = [:]
        var records: [String: StoredVersion] = [:]
        for record in layouts where !record.deleted {
            do {
                documents[record.account] = try LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
                records[record.account] = record
            } catch {
                logger.error("layout \(record.account) v\(record.version) no longer reads: \(error)")
            }
        }
        let base = Snapshot(entries: [:], documents: documents, records: records, globalStrings: tables, stringsRecords: stringsRecords)
        return base.rebuilding(Set(documents.keys), logger: logger)
    }

    /// This snapshot with `accounts`' entries compiled anew from `documents` (others kept).
    func rebuilding(_ accounts: Set<String>, logger: Logger) -> Snapshot {
        var entries = self.entries
        for account in accounts {
            guard let document = documents[account], let record = records[account] else {
                entries[account] = nil
                continue
            }
            do {
                let resolved = try resolve(account, version: record.version, document: document, strict: false)
                var modified = record.createdAtMillis
                for base in resolved.bases { modified = max(modified, records[base]?.createdAtMillis ?? 0) }
                for table in stringsRecords.values { modified = max(modified, table.createdAtMillis) }
                entries[account] = LayoutEntry(
                    resolved: resolved, globalStrings: globalStrings, modifiedMillis: modified)
            } catch {
                logger.error("layout \(account) v\(record.version) does not compile against the current store: \(error)")
                entries[account] = nil
            }
        }
        return Snapshot(
            entries: entries, documents: documents, records: records, globalStrings: globalStrings, stringsRecords: stringsRecords)
    }

    /// This snapshot after `record` (a new version or a deletion) was committed: the account and every
    /// layout that extends it are compiled anew. An older record than the one held is ignored.
    func applying(_ record: StoredVersion, document: LayoutDocument?, logger: Logger) -> Snapshot {
        if let held = records[record.account], held.version >= record.version { return self }
        var documents = self.documents
        var records = self.records
        if record.deleted {
            documents[record.account] = nil
            records[record.account] = nil
        } else if let document {
            documents[record.account] = document
            records[record.account] = record
        }
        let next = Snapshot(
            entries: entries, documents: documents, records: records, globalStrings: globalStrings, stringsRecords: stringsRecords)
        return next.rebuilding(Set([record.account] + next.dependents(of: record.account) + dependents(of: record.account)), logger: logger)
    }

    /// This snapshot after a strings table was committed: every layout is compiled anew.
    func applying(strings record: StoredStrings, table: StringsTable, logger: Logger) -> Snapshot {
        if let held = stringsRecords[record.locale], held.version >= record.version { return self }
        var tables = globalStrings
        var stringsRecords = self.stringsRecords
        tables[record.locale] = table
        stringsRecords[record.locale] = record
        let next = Snapshot(entries: [:], documents: documents, records: records, globalStrings: tables, stringsRecords: stringsRecords)
        return next.rebuilding(Set(documents.keys), logger: logger)
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
