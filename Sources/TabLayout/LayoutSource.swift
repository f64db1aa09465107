/// The encodings a source can come in.
public enum SourceFormat: String, Sendable, Equatable {
    case json
    case xmlPlist
    case binaryPlist

    /// The format a stored or uploaded `Content-Type` names (parameters and case ignored), nil for others.
    /// The one mapping from media types to formats.
    public init?(contentType: String) {
        switch Self.mediaType(contentType) {
        case "application/json": self = .json
        case "application/x-plist", "application/xml", "text/xml": self = .xmlPlist
        case "application/octet-stream": self = .binaryPlist
        default: return nil
        }
    }

    /// `Application/JSON; charset=utf-8` → `application/json`.
    public static func mediaType(_ contentType: String) -> String {
        var type = Substring(contentType.prefix { $0 != ";" })
        while let first = type.first, first == " " || first == "\t" { type.removeFirst() }
        while let last = type.last, last == " " || last == "\t" { type.removeLast() }
        return type.lowercased()
    }

    /// The format of `bytes`: the `bplist00` magic wins; otherwise `declared`, else the first
    /// significant character (`<` for XML, anything else JSON).
    public static func detect(_ bytes: [UInt8], declared: SourceFormat? = nil) -> SourceFormat {
        if BinaryPlistReader.isBinaryPlist(bytes) { return .binaryPlist }
        if let declared, declared != .binaryPlist { return declared }
        // An XML plist in UTF-16 with its byte order mark (`<` is 3C 00 or 00 3C).
        if bytes.starts(with: [0xFF, 0xFE, 0x3C, 0x00]) || bytes.starts(with: [0xFE, 0xFF, 0x00, 0x3C]) { return .xmlPlist }
        let significant = bytes.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        return significant == UInt8(ascii: "<") ? .xmlPlist : .json
    }
}

/// Reading and validating a source.
public enum LayoutSource {
    /// The source's value tree (no validation of the layout format).
    /// - Throws: ``LayoutError`` (`.tooLarge` beyond ``LayoutLimits/sourceBytes``).
    public static func readTree(_ bytes: [UInt8], format declared: SourceFormat? = nil) throws(LayoutError) -> SourceNode {
        guard bytes.count <= LayoutLimits.sourceBytes else {
            throw LayoutError(
                pointer: "", line: nil, "the source is \(bytes.count) bytes; at most \(LayoutLimits.sourceBytes)", kind: .tooLarge)
        }
        switch SourceFormat.detect(bytes, declared: declared) {
        case .binaryPlist: return try BinaryPlistReader.read(bytes)
        case .xmlPlist: return try XMLPlistReader.read(bytes)
        case .json: return try JSONReader.read(bytes)
        }
    }

    /// A validated document, or every problem at once.
    public static func parse(_ bytes: [UInt8], format declared: SourceFormat? = nil) throws(LayoutError) -> LayoutDocument {
        try validate(try readTree(bytes, format: declared))
    }

    /// Validates a value tree as a layout.
    public static func validate(_ tree: SourceNode) throws(LayoutError) -> LayoutDocument {
        var validator = LayoutValidator()
        let document = validator.document(tree)
        guard validator.diagnostics.isEmpty else { throw LayoutError(validator.diagnostics) }
        return document
    }
}
