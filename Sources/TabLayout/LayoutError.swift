/// Why a source could not be compiled. Every problem found is reported at once.
public struct LayoutError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The source breaks the layout format (422).
        case invalid
        /// The source exceeds a size limit (413).
        case tooLarge
    }

    public var kind: Kind
    public var diagnostics: [FieldError]

    /// An error with `diagnostics`, capped by ``DiagnosticLimits``: at most ``DiagnosticLimits/count`` of them (the
    /// last one then says how many more there were), each pointer and message shortened with an ellipsis, and
    /// ``DiagnosticLimits/totalBytes`` in all, so that no source can make an error response large.
    /// - Parameter omitted: problems found but not kept in `diagnostics` (a caller that stopped collecting).
    public init(_ diagnostics: [FieldError], kind: Kind = .invalid, omitted: Int = 0) {
        self.kind = kind
        self.diagnostics = DiagnosticLimits.capped(diagnostics, omitted: omitted)
    }

    init(pointer: String, line: Int?, _ message: String, kind: Kind = .invalid) {
        self.init([FieldError(pointer: pointer, line: line, message: message)], kind: kind)
    }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }

    /// This error, found inside the member `key` of the value its pointers are relative to.
    func within(_ key: String) -> LayoutError { prefixed(JSONPointer.appending("", key)) }

    /// This error, found inside element `index` of the array its pointers are relative to.
    func within(_ index: Int) -> LayoutError { prefixed(JSONPointer.appending("", index)) }

    private func prefixed(_ prefix: String) -> LayoutError {
        var error = self
        for i in error.diagnostics.indices {
            error.diagnostics[i].pointer = DiagnosticLimits.shortened(
                prefix + error.diagnostics[i].pointer, to: DiagnosticLimits.pointerBytes)
        }
        return error
    }
}

/// The bounds of an error report: whatever a source holds, a ``LayoutError`` stays small (tens of KiB).
public enum DiagnosticLimits {
    /// Diagnostics in one error, the closing "… more" line included.
    public static let count = 100
    /// UTF-8 bytes of one pointer; a longer one keeps its start and its end around an ellipsis.
    public static let pointerBytes = 512
    /// UTF-8 bytes of one message; a longer one ends with an ellipsis.
    public static let messageBytes = 512
    /// UTF-8 bytes of all pointers and messages together.
    public static let totalBytes = 32 * 1024

    /// `diagnostics` within the limits; the last diagnostic says how many were left out (with `omitted`).
    static func capped(_ diagnostics: [FieldError], omitted: Int = 0) -> [FieldError] {
        func size(_ diagnostic: FieldError) -> Int { diagnostic.pointer.utf8.count + diagnostic.message.utf8.count }
        let short = diagnostics.prefix(count).map { diagnostic in
            var short = diagnostic
            short.pointer = shortened(diagnostic.pointer, to: pointerBytes)
            short.message = shortened(diagnostic.message, to: messageBytes, keepingEnd: false)
            return short
        }
        if omitted == 0, diagnostics.count <= count, short.reduce(0, { $0 + size($1) }) <= totalBytes { return short }
        // Room for the closing line, whose message is short.
        let budget = totalBytes - 160
        var kept: [FieldError] = []
        var bytes = 0
        for diagnostic in short.prefix(count - 1) {
            guard bytes + size(diagnostic) <= budget else { break }
            bytes += size(diagnostic)
            kept.append(diagnostic)
        }
        let left = diagnostics.count - kept.count + omitted
        kept.append(
            FieldError(
                pointer: "", line: nil,
                message:
                    "… and \(left) more problem\(left == 1 ? "" : "s") (an error lists at most \(count), in at most \(totalBytes) bytes)"))
        return kept
    }

    /// `text` cut to at most `limit` UTF-8 bytes on character boundaries, an ellipsis marking the cut: in the middle
    /// (a pointer keeps where it starts and the member it ends at) or at the end.
    static func shortened(_ text: String, to limit: Int, keepingEnd: Bool = true) -> String {
        guard text.utf8.count > limit else { return text }
        let ellipsis = "…"
        let budget = limit - ellipsis.utf8.count
        let scalars = text.unicodeScalars
        func prefix(_ bytes: Int) -> Substring.UnicodeScalarView {
            var end = scalars.startIndex
            var used = 0
            while end != scalars.endIndex, used + UTF8.width(scalars[end]) <= bytes {
                used += UTF8.width(scalars[end])
                scalars.formIndex(after: &end)
            }
            return scalars[scalars.startIndex..<end]
        }
        guard keepingEnd else { return String(prefix(budget)) + ellipsis }
        let head = prefix(budget / 2)
        var start = scalars.endIndex
        var used = 0
        while start > head.endIndex {
            let before = scalars.index(before: start)
            guard used + UTF8.width(scalars[before]) <= budget - budget / 2 else { break }
            used += UTF8.width(scalars[before])
            start = before
        }
        return String(head) + ellipsis + String(scalars[start...])
    }
}

/// The limits of a layout (docs/layout-format.md, "Limits"), in one place.
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
    /// Bytes of one compiled layout in canonical JSON, for any locale (titles expand through strings tables, so a
    /// small source can compile to a large answer).
    public static let compiledBytes = 2 * 1024 * 1024

    /// Refuses a compiled layout above ``compiledBytes`` (422), pointing at its largest top-level tab.
    public static func checkCompiledSize(_ compiled: CompiledLayout, locale: String) throws(LayoutError) {
        let size = CanonicalJSON.encode(compiled.document).count
        guard size > compiledBytes else { return }
        var pointer = "/tabs"
        var detail = ""
        if case .object(let members) = compiled.document, case .array(let tabs)? = members["tabs"] {
            let sizes = tabs.map { CanonicalJSON.encode($0).count }
            if let largest = sizes.indices.max(by: { sizes[$0] < sizes[$1] }) {
                pointer = "/tabs/\(largest)"
                detail = "; its largest tab, \(pointer) of the compiled layout, is \(sizes[largest]) bytes"
            }
        }
        throw LayoutError(
            pointer: pointer, line: nil,
            "compiled for locale '\(locale)' the layout is \(size) bytes, above the limit of \(compiledBytes)\(detail): shorten its strings or tabs"
        )
    }
}
