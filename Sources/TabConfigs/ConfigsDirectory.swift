import Foundation
import TabLayout
import TabStore

/// A configs directory: `layouts/<account>.{plist,json}` and `strings/<locale>.{strings,json}`.
public struct ConfigsDirectory: Sendable {
    public struct File: Sendable {
        /// The account (layouts) or locale (strings): the file's stem.
        public var name: String
        public var path: String
        public var bytes: [UInt8]
        public var contentType: String
    }

    public var layouts: [File]
    public var strings: [File]

    /// Why a configs directory could not be read.
    public struct ReadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads every layout and strings file (other files are ignored).
    /// - Throws: ``ReadError`` when the directory has neither `layouts/` nor `strings/`, or a file cannot be read.
    public static func load(_ path: String) throws(ReadError) -> ConfigsDirectory {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ReadError(description: "configs directory '\(path)' does not exist")
        }
        func files(_ folder: String, _ types: [String: String]) throws(ReadError) -> [File] {
            let directory = (path as NSString).appendingPathComponent(folder)
            guard let names = try? manager.contentsOfDirectory(atPath: directory) else { return [] }
            var result: [File] = []
            for name in names.sorted() {
                let ext = (name as NSString).pathExtension.lowercased()
                guard let contentType = types[ext], !name.hasPrefix(".") else { continue }
                let file = (directory as NSString).appendingPathComponent(name)
                guard let data = manager.contents(atPath: file) else { throw ReadError(description: "cannot read \(file)") }
                result.append(
                    File(name: (name as NSString).deletingPathExtension, path: file, bytes: [UInt8](data), contentType: contentType))
            }
            return result
        }
        return ConfigsDirectory(
            layouts: try files("layouts", ["plist": "application/x-plist", "json": "application/json"]),
            strings: try files("strings", ["strings": "text/plain; charset=utf-8", "json": "application/json"]))
    }

    /// Every layout's validated document, and the diagnostics of those that do not validate (by file).
    public func documents() -> (documents: [String: LayoutDocument], failures: [(File, LayoutError)]) {
        var documents: [String: LayoutDocument] = [:]
        var failures: [(File, LayoutError)] = []
        for file in layouts {
            do throws(LayoutError) {
                documents[file.name] = try LayoutSource.parse(
                    file.bytes, format: file.contentType == "application/json" ? .json : .xmlPlist)
            } catch {
                failures.append((file, error))
            }
        }
        return (documents, failures)
    }

    /// Every strings table, by locale.
    /// - Throws: ``LayoutError`` of the first table that does not read (its path prefixed to the detail).
    public func stringTables() throws(ReadError) -> [String: StringsTable] {
        var tables: [String: StringsTable] = [:]
        for file in strings {
            do throws(LayoutError) {
                tables[file.name] = try StringsTable.read(file.bytes)
            } catch {
                throw ReadError(description: error.diagnostics.map { "\(file.path):\($0)" }.joined(separator: "\n"))
            }
        }
        return tables
    }

    /// What an import did.
    public struct ImportReport: Sendable {
        public var imported: [String] = []
        public var skipped: [String] = []
        public var refused: [String] = []
    }

    /// Writes files into `store`: for accounts and locales that never had a version (the store wins), or,
    /// with `force`, a new version of each over the current one.
    /// - Parameter progress: called after each file with (files done, files in all), e.g. to show progress on a terminal.
    public func importInto(_ store: any TabStore, force: Bool, progress: ((Int, Int) -> Void)? = nil) async throws(StoreError)
        -> ImportReport
    {
        var report = ImportReport()
        let (valid, failures) = documents()
        let total = layouts.count + strings.count
        var done = 0
        for (file, error) in failures {
            report.refused.append("\(file.path): \(error.description.replacingOccurrences(of: "\n", with: "; "))")
        }
        for file in layouts where valid[file.name] != nil {
            done += 1
            progress?(done, total)
            guard isValidAccountName(file.name) else {
                report.refused.append("\(file.path): '\(file.name)' is not an account name")
                continue
            }
            let latest = try await store.latest(account: file.name)
            let precondition: WritePrecondition
            if let latest {
                guard force else {
                    report.skipped.append(file.name)
                    continue
                }
                precondition = latest.deleted ? .none : .ifMatch([latest.etag])
            } else {
                precondition = .ifNoneMatchAny
            }
            _ = try await store.append(
                LayoutWrite(
                    account: file.name, source: file.bytes, contentType: file.contentType, precondition: precondition,
                    author: "configs", message: "imported from \(file.path)", extends: valid[file.name]?.extends ?? ""))
            report.imported.append(file.name)
        }
        let current = Dictionary(try await store.currentStrings().map { ($0.locale, $0) }) { $1 }
        for file in strings {
            guard (try? StringsTable.read(file.bytes)) != nil else {
                report.refused.append("\(file.path): not a valid strings table")
                continue
            }
            let existing = current[file.name]
            if existing != nil && !force {
                report.skipped.append("strings/\(file.name)")
                continue
            }
            _ = try await store.appendStrings(
                locale: file.name, source: file.bytes, contentType: file.contentType,
                precondition: existing.map { .ifMatch([$0.etag]) } ?? .ifNoneMatchAny, author: "configs")
            report.imported.append("strings/\(file.name)")
        }
        return report
    }
}
