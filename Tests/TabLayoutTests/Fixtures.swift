import Foundation
import TabLayout

/// Fixture files next to this source file (`Fixtures/…`).
enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func bytes(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: root.appendingPathComponent(path)))
    }

    static func names(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path).sorted()
    }

    /// The configs fixture's documents and global strings tables, as the server would load them.
    static func configs() throws -> (documents: [String: LayoutDocument], tables: [String: StringsTable]) {
        var documents: [String: LayoutDocument] = [:]
        for name in try names("configs/layouts") {
            let stem = (name as NSString).deletingPathExtension
            documents[stem] = try LayoutSource.parse(try bytes("configs/layouts/" + name), format: name.hasSuffix(".json") ? .json : nil)
        }
        var tables: [String: StringsTable] = [:]
        for name in try names("configs/strings") {
            tables[(name as NSString).deletingPathExtension] = try StringsTable.read(try bytes("configs/strings/" + name))
        }
        return (documents, tables)
    }

    /// Diagnostics of a source that must not compile.
    static func diagnostics(_ source: String, format: SourceFormat? = .json) -> [FieldError] {
        diagnostics(Array(source.utf8), format: format)
    }

    static func diagnostics(_ source: [UInt8], format: SourceFormat? = nil) -> [FieldError] {
        do {
            _ = try LayoutSource.parse(source, format: format)
            return []
        } catch {
            return error.diagnostics
        }
    }
}
