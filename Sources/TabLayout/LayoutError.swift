/// One problem with a source: where it is (JSON Pointer, and the line for text formats) and what is wrong.
public struct LayoutDiagnostic: Sendable, Equatable, CustomStringConvertible {
    /// The JSON Pointer of the offending value ("" for the whole document).
    public var pointer: String
    /// The 1-based line of that value in an XML plist or JSON source.
    public var line: Int?
    public var message: String

    public init(pointer: String, line: Int?, message: String) {
        self.pointer = pointer
        self.line = line
        self.message = message
    }

    /// `line: pointer: message` (the line only when known).
    public var description: String {
        let place = pointer.isEmpty ? "(document)" : pointer
        if let line { return "\(line): \(place): \(message)" }
        return "\(place): \(message)"
    }
}

/// Why a source could not be compiled. Every problem found is reported at once.
public struct LayoutError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The source breaks the layout format (422).
        case invalid
        /// The source exceeds a size limit (413).
        case tooLarge
    }

    public var kind: Kind
    public var diagnostics: [LayoutDiagnostic]

    public init(_ diagnostics: [LayoutDiagnostic], kind: Kind = .invalid) {
        self.kind = kind
        self.diagnostics = diagnostics
    }

    init(pointer: String, line: Int?, _ message: String, kind: Kind = .invalid) {
        self.init([LayoutDiagnostic(pointer: pointer, line: line, message: message)], kind: kind)
    }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }

    /// This error, found inside the member `key` of the value its pointers are relative to.
    func within(_ key: String) -> LayoutError { prefixed(JSONPointer.appending("", key)) }

    /// This error, found inside element `index` of the array its pointers are relative to.
    func within(_ index: Int) -> LayoutError { prefixed(JSONPointer.appending("", index)) }

    private func prefixed(_ prefix: String) -> LayoutError {
        var error = self
        for i in error.diagnostics.indices { error.diagnostics[i].pointer = prefix + error.diagnostics[i].pointer }
        return error
    }
}

/// The limits of LAYOUT.md, in one place.
public enum LayoutLimits {
    /// Bytes in one source.
    public static let sourceBytes = 1024 * 1024
    /// Nesting of arrays and dictionaries in any source.
    public static let depth = 64
    /// Tabs in one list (the top level, or one tab's children).
    public static let tabsPerLevel = 64
    /// Levels of `children` below a top-level tab.
    public static let childDepth = 4
    /// UTF-8 bytes in any one string.
    public static let stringBytes = 4096
    /// Layouts in one `extends` chain, the overlay included.
    public static let inheritanceDepth = 8
    /// Objects decoded from one binary property list (shared references count each time they are used).
    public static let binaryPlistObjects = 200_000
}
