/// The locales a layout has tables for, prepared once for ``AcceptLanguage/choose(table:lines:)``.
public struct LocaleTable: Sendable {
    /// The locales as given, in the order given (a match returns the first).
    public let locales: [String]
    /// Each locale lower-cased with `_` as `-` (`pt_BR` → `pt-br`).
    let normalized: [[UInt8]]
    let longest: Int

    /// - Parameter locales: the available locales (a layout keeps them sorted); `-` and `_` are alike, case does not
    ///   matter.
    public init(_ locales: [String]) {
        self.locales = locales
        normalized = locales.map { locale in
            locale.lowercased().utf8.map { $0 == UInt8(ascii: "_") ? UInt8(ascii: "-") : $0 }
        }
        longest = normalized.map(\.count).max() ?? 0
    }

    /// The index of the locale for one tag (`?locale=fr-CA`): `tag` itself (case-insensitively, `-` and `_` alike),
    /// else its shorter prefixes cut at a `-` or `_`; nil when none is available. The answers of
    /// `LocaleMatcher.match(_:_:)` for every ASCII tag.
    public func match(_ tag: String) -> Int? {
        var tag = tag
        return tag.withUTF8 { bytes in match(bytes.whole, in: bytes) }
    }

    /// The index of the first locale equal to `line[range]` lower-cased with `_` as `-`.
    func firstIndex(equalTo range: ByteRange, in line: FieldLine) -> Int? {
        guard range.count <= longest else { return nil }
        for index in normalized.indices where normalized[index].count == range.count {
            let equal = normalized[index].withUnsafeBufferPointer { candidate in
                var offset = 0
                while offset < candidate.count {
                    var byte = line[range.start + offset].asciiLowercased
                    if byte == UInt8(ascii: "_") { byte = UInt8(ascii: "-") }
                    if byte != candidate[offset] { return false }
                    offset += 1
                }
                return true
            }
            if equal { return index }
        }
        return nil
    }

    /// `tag` itself (case-insensitively, `-` and `_` alike), else its shorter prefixes cut at a `-` or `_`
    /// (`zh-Hant-TW`, `zh-Hant`, `zh`).
    func match(_ tag: ByteRange, in line: FieldLine) -> Int? {
        var candidate = tag
        while !candidate.isEmpty {
            if let index = firstIndex(equalTo: candidate, in: line) { return index }
            var cut = candidate.end - 1
            while cut >= candidate.start, line[cut] != UInt8(ascii: "-"), line[cut] != UInt8(ascii: "_") { cut -= 1 }
            guard cut >= candidate.start else { return nil }
            candidate.end = cut
        }
        return nil
    }
}

/// `Accept-Language` (RFC 9110 §12.5.4): which of a layout's locales to send.
public enum AcceptLanguage {
    /// The index in `table` of the locale for this field, or nil for the layout's default locale.
    ///
    /// Ranges are tried from the highest q down (the earlier first when equal; q=0 and q that is not a number
    /// refuse); the first that names an available locale wins (`fr-CA` falls back to `fr`; `-` and `_` alike;
    /// case-insensitive); `*` means the default. These are the answers of the replaced `OldNegotiation.choose(acceptLanguage:
    /// available:fallback:)` (the differential tests' oracle) for every ASCII field value: same inputs, same locale.
    /// - Parameters:
    ///   - table: the available locales.
    ///   - lines: the field's lines (see ``FieldLines``).
    /// - Complexity: O(n × locales) for n bytes of field; allocates nothing for plain q values.
    public static func choose(table: LocaleTable, lines: FieldLines) -> Int? {
        var best: (q: Double, index: Int?)?
        lines { line in
            line.forEachPart(of: line.whole, separatedBy: UInt8(ascii: ",")) { part in
                consider(part, in: line, table: table, best: &best)
            }
        }
        return best?.index
    }

    /// ``choose(table:lines:)`` for lines held in a sequence.
    @inlinable
    public static func choose(_ lines: some Sequence<FieldLine>, table: LocaleTable) -> Int? {
        choose(table: table) { yield in
            for line in lines { yield(line) }
        }
    }

    /// One comma-separated part: `language-range *( ";" parameter )`. It replaces `best` when its q is higher and it
    /// decides something (names an available locale, or is `*`).
    private static func consider(_ part: ByteRange, in line: FieldLine, table: LocaleTable, best: inout (q: Double, index: Int?)?) {
        var tag: ByteRange?
        var q = 1.0
        var sawTag = false
        line.forEachPart(of: part, separatedBy: UInt8(ascii: ";")) { piece in
            if piece.isEmpty { return }
            if !sawTag {
                sawTag = true
                tag = piece.trimming(line) { $0.isLanguageTrimmed }
                return
            }
            let parameter = piece.trimming(line) { $0.isLanguageTrimmed }
            if line.hasPrefix(UInt8(ascii: "q"), UInt8(ascii: "="), in: parameter)
                || line.hasPrefix(UInt8(ascii: "Q"), UInt8(ascii: "="), in: parameter)
            {
                q = DoubleQuality.parse(line, ByteRange(start: parameter.start + 2, end: parameter.end), lowercasing: false)
            }
        }
        guard let tag, !tag.isEmpty, q > 0 else { return }
        if let best, !(q > best.q) { return }
        if tag.count == 1, line[tag.start] == UInt8(ascii: "*") {
            best = (q, nil)
        } else if let index = table.match(tag, in: line) {
            best = (q, index)
        }
    }
}
