import Foundation
import TabLayout

/// `compile` and `validate` without a server: a file, optionally with a configs directory's strings tables
/// and base layouts, compiled exactly as the server would.
public struct OfflineCompiler: Sendable {
    private let documents: [String: LayoutDocument]
    /// The configs directory's global strings tables (empty without one).
    public let tables: [String: StringsTable]

    /// - Throws: ``ConfigsDirectory/ReadError`` when `configs` cannot be read.
    public init(configs: String?) throws(ConfigsDirectory.ReadError) {
        guard let configs else {
            documents = [:]
            tables = [:]
            return
        }
        let directory = try ConfigsDirectory.load(configs)
        documents = directory.documents().documents
        tables = try directory.stringTables()
    }

    /// A problem in one file, formatted `file:line: pointer: message`.
    public static func describe(_ error: LayoutError, file: String) -> [String] {
        error.diagnostics.map { d in
            "\(file):\(d.line.map(String.init) ?? "-"): \(d.pointer.isEmpty ? "/" : d.pointer): \(d.message)"
        }
    }

    private static func read(_ path: String) throws(LayoutError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LayoutError([FieldError(pointer: "", line: nil, message: "cannot read the file")])
        }
        return [UInt8](data)
    }

    private static func format(_ path: String) -> SourceFormat? {
        ConfigsDirectory.layoutTypes[(path as NSString).pathExtension.lowercased()].flatMap(SourceFormat.init(contentType:))
    }

    private func resolve(_ path: String) throws(LayoutError) -> ResolvedLayout {
        let document = try LayoutSource.parse(try Self.read(path), format: Self.format(path))
        return try LayoutResolver.resolve(name: Self.name(path), version: nil, document: document) { documents[$0] }
    }

    private static func name(_ path: String) -> String {
        ((path as NSString).lastPathComponent as NSString).deletingPathExtension
    }

    /// Validates a file, and its bases when a configs directory was given (without one, an overlay is
    /// checked on its own).
    /// - Returns: the layout resolved (for the lint), nil for an overlay checked on its own.
    @discardableResult
    public func validate(_ path: String) throws(LayoutError) -> ResolvedLayout? {
        let document = try LayoutSource.parse(try Self.read(path), format: Self.format(path))
        if document.extends != nil && documents.isEmpty { return nil }
        return try LayoutResolver.resolve(name: Self.name(path), version: nil, document: document) { documents[$0] }
    }

    /// Compiles a file for one client and encodes it.
    /// - Parameter plist: an XML property list instead of canonical JSON.
    public func compile(_ path: String, locale: String?, platform: Platform?, appVersion: AppVersion?, plist: Bool) throws(LayoutError)
        -> [UInt8]
    {
        let resolved = try resolve(path)
        var available = Set(resolved.strings.keys).union(tables.keys)
        available.insert(resolved.defaultLocale)
        let chosen = locale.flatMap { LocaleMatcher.match($0, available.sorted()) } ?? resolved.defaultLocale
        let compiled = LayoutCompiler.compile(
            resolved, for: ClientContext(locale: chosen, platform: platform, appVersion: appVersion), globalStrings: tables)
        return plist ? PropertyListXML.encode(compiled.document) : CanonicalJSON.encode(compiled.document) + [0x0A]
    }
}
