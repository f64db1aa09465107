import Foundation
import TabDelivery
import TabLayout
import TabStore

/// A configs directory: `layouts/<account>.{plist,json}` and `strings/<locale>.{strings,json}`.
public struct ConfigsDirectory: Sendable {
    /// The layout files a configs directory holds, by extension, and the content type each is stored with.
    public static let layoutTypes = ["plist": "application/x-plist", "json": "application/json"]

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
        let root = realPath(path) ?? path
        func files(_ folder: String, _ types: [String: String]) throws(ReadError) -> [File] {
            let directory = (path as NSString).appendingPathComponent(folder)
            guard let names = try? manager.contentsOfDirectory(atPath: directory) else { return [] }
            var result: [File] = []
            for name in names.sorted() {
                let ext = (name as NSString).pathExtension.lowercased()
                guard let contentType = types[ext], !name.hasPrefix(".") else { continue }
                let file = (directory as NSString).appendingPathComponent(name)
                let bytes = try readSource(file, inside: root)
                result.append(File(name: (name as NSString).deletingPathExtension, path: file, bytes: bytes, contentType: contentType))
            }
            return result
        }
        return ConfigsDirectory(
            layouts: try files("layouts", Self.layoutTypes),
            strings: try files("strings", ["strings": "text/plain; charset=utf-8", "json": "application/json"]))
    }

    /// A source file's bytes, when it is a regular file (a symbolic link may point to one) inside `root` and of
    /// at most ``LayoutLimits/sourceBytes``: the size is checked before anything is read, and nothing outside the
    /// configs directory (a link to `/etc/…`), FIFO or device is opened.
    static func readSource(_ file: String, inside root: String) throws(ReadError) -> [UInt8] {
        guard let resolved = realPath(file) else { throw ReadError(description: "cannot read \(file)") }
        guard resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
            throw ReadError(description: "\(file) leads outside the configs directory (to \(resolved)); not read")
        }
        let descriptor = open(resolved, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { throw ReadError(description: "cannot read \(file): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw ReadError(description: "\(file) is not a regular file; not read")
        }
        guard status.st_size <= LayoutLimits.sourceBytes else {
            throw ReadError(description: "\(file) is \(status.st_size) bytes; a source holds at most \(LayoutLimits.sourceBytes)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        guard filled == bytes.count else { throw ReadError(description: "cannot read \(file): it changed while read") }
        return bytes
    }

    /// Every layout's validated document, and the diagnostics of those that do not validate (by file).
    public func documents() -> (documents: [String: LayoutDocument], failures: [(File, LayoutError)]) {
        var documents: [String: LayoutDocument] = [:]
        var failures: [(File, LayoutError)] = []
        for file in layouts {
            do throws(LayoutError) {
                documents[file.name] = try LayoutSource.parse(
                    file.bytes, format: SourceFormat(contentType: file.contentType))
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
    public func importInto(
        _ store: any TabStore, force: Bool, environments: [String] = [TabStoreDefaults.environment], progress: ((Int, Int) -> Void)? = nil
    ) async throws(StoreError)
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
            guard let account = AccountName(file.name)?.text else {
                report.refused.append("\(file.path): '\(file.name)' is not an account name")
                continue
            }
            let written = try await Self.seed(
                environments,
                precondition: { (environment) async throws(StoreError) -> WritePrecondition? in
                    let current = try await store.pointed(account: account, environment: environment)
                    if current != nil, !force { return nil }
                    return current.map { $0.deleted ? .none : .ifMatch([$0.etag]) } ?? .ifNoneMatchAny
                },
                store: { (environment, precondition) async throws(StoreError) -> StoredVersion in
                    var write = LayoutWrite(
                        account: account, source: file.bytes, contentType: file.contentType, precondition: precondition,
                        author: "configs", message: "imported from \(file.path)", extends: valid[account]?.extends ?? "")
                    write.environment = environment
                    return try await store.append(write)
                },
                point: { (record, from, environment, precondition) async throws(StoreError) in
                    _ = try await store.promote(account: account, from: from, to: environment, author: "configs", audit: nil) {
                        (source, id, target, latest, _) throws(RolloutError) in
                        try PromotionRequest(from: EnvironmentName(from)!, to: EnvironmentName(environment)!).decide(
                            account: account, fromPointer: source,
                            context: RolloutStartContext(
                                account: account, environment: EnvironmentName(environment)!, id: id, current: target,
                                latest: latest, precondition: precondition,
                                now: store.clock.now,
                                availability: { $0 == record.version ? .available : .missing }))
                    }
                })
            if written {
                report.imported.append(file.name)
            } else {
                report.skipped.append(file.name)
            }
        }
        for file in strings {
            guard (try? StringsTable.read(file.bytes)) != nil else {
                report.refused.append("\(file.path): not a valid strings table")
                continue
            }
            let locale = file.name
            let written = try await Self.seed(
                environments,
                precondition: { (environment) async throws(StoreError) -> WritePrecondition? in
                    let existing = try await store.pointedStrings(locale: locale, environment: environment)
                    if existing != nil, !force { return nil }
                    return existing.map { .ifMatch([$0.etag]) } ?? .ifNoneMatchAny
                },
                store: { (environment, precondition) async throws(StoreError) -> StoredStrings in
                    try await store.appendStrings(
                        locale: locale, environment: environment, source: file.bytes, contentType: file.contentType,
                        precondition: precondition, author: "configs", audit: nil)
                },
                point: { (_, from, environment, precondition) async throws(StoreError) in
                    _ = try await store.promoteStrings(locale: locale, from: from, to: environment, author: "configs", audit: nil) {
                        (source, current) throws(RolloutError) in
                        try PromotionRequest(from: EnvironmentName(from)!, to: EnvironmentName(environment)!).decide(
                            locale: locale, fromPointer: source, current: current, precondition: precondition)
                    }
                })
            if written {
                report.imported.append("strings/\(file.name)")
            } else {
                report.skipped.append("strings/\(file.name)")
            }
        }
        return report
    }

    /// Writes one file into each of `environments` that lacks it (each one, with `force`): stored once, into the first
    /// of them, and every other pointed at that version (one version, not one per environment).
    /// - Parameters:
    ///   - precondition: the write's precondition in an environment, nil when the environment keeps what it has.
    ///   - store: stores the file into an environment.
    ///   - point: points an environment (the third argument) at what `store` stored into another (the second).
    /// - Returns: whether any environment was written.
    private static func seed<Stored>(
        _ environments: [String],
        precondition: (String) async throws(StoreError) -> WritePrecondition?,
        store: (String, WritePrecondition) async throws(StoreError) -> Stored,
        point: (Stored, String, String, WritePrecondition) async throws(StoreError) -> Void
    ) async throws(StoreError) -> Bool {
        var stored: (Stored, String)?
        for environment in environments {
            guard let precondition = try await precondition(environment) else { continue }
            if let (record, from) = stored {
                try await point(record, from, environment, precondition)
            } else {
                stored = (try await store(environment, precondition), environment)
            }
        }
        return stored != nil
    }
}

/// The absolute path `path` names with every symbolic link resolved, or nil when it does not exist.
func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
