/// The media types a resource is available in, in order of the server's preference (ties go to the earlier one).
public struct MediaTypeOffers: Sendable {
    /// Each offer's type and subtype, as given (compared with the client's lower-cased ranges).
    let types: [[UInt8]]
    let subtypes: [[UInt8]]

    /// The number of offers.
    public var count: Int { types.count }

    /// - Parameter mediaTypes: `type/subtype` strings, lower case, without parameters (`application/json`).
    public init(_ mediaTypes: [String]) {
        var types: [[UInt8]] = []
        var subtypes: [[UInt8]] = []
        for mediaType in mediaTypes {
            let bytes = Array(mediaType.utf8)
            let slash = bytes.firstIndex(of: UInt8(ascii: "/")) ?? bytes.count
            types.append(Array(bytes[..<slash]))
            subtypes.append(slash < bytes.count ? Array(bytes[(slash + 1)...]) : [])
        }
        self.types = types
        self.subtypes = subtypes
    }
}

/// `Accept` (RFC 9110 §12.5.1): which offered media type to send.
public enum AcceptMediaType {
    /// The index of the offer with the highest q among the field's media ranges, or nil when the client accepts
    /// none of them (406). No field, or only empty lines, accepts the first offer.
    ///
    /// For each offer the most specific range that names it counts (`type/subtype`, then `type/*`, then `*/*`; the
    /// first of equally specific ones); q=0 refuses; parameters other than q are ignored; ties go to the earlier
    /// offer. These are, byte for byte, the answers of the Foundation-based `OldNegotiation.choose(accept:offers:)` (the test oracle) it
    /// replaces, for every ASCII field value (bytes above 0x7F are compared as they are, not as Unicode
    /// characters). A q that is not a plain decimal is read by `Double(_:)` as before.
    /// - Parameters:
    ///   - offers: what the resource is available as.
    ///   - lines: the field's lines (see ``FieldLines``).
    /// - Complexity: O(n × offers) for n bytes of field; allocates nothing for plain q values (the per-offer state is
    ///   a temporary allocation, on the stack for any realistic number of offers).
    public static func choose(offers: MediaTypeOffers, lines: FieldLines) -> Int? {
        let count = offers.count
        return withUnsafeTemporaryAllocation(of: (level: Int, q: Double).self, capacity: max(count, 1)) { state in
            for index in 0..<count { state[index] = (-1, 0) }
            var sawContent = false
            lines { line in
                let whole = line.whole.trimming(line) { $0.isOWS }
                if whole.isEmpty { return }
                sawContent = true
                line.forEachPart(of: line.whole, separatedBy: UInt8(ascii: ",")) { part in
                    consider(part, in: line, offers: offers, state: state)
                }
            }
            guard sawContent else { return count > 0 ? 0 : nil }
            var best: (index: Int, q: Double)?
            for index in 0..<count where state[index].level >= 0 {
                let q = state[index].q
                if q > 0, q > (best?.q ?? 0) { best = (index, q) }
            }
            return best?.index
        }
    }

    /// ``choose(offers:lines:)`` for lines held in a sequence.
    @inlinable
    public static func choose(_ lines: some Sequence<FieldLine>, offers: MediaTypeOffers) -> Int? {
        choose(offers: offers) { yield in
            for line in lines { yield(line) }
        }
    }

    /// One comma-separated part: `media-range *( ";" parameter )`, updating each offer it names more specifically
    /// than any range before.
    private static func consider(
        _ part: ByteRange, in line: FieldLine, offers: MediaTypeOffers, state: UnsafeMutableBufferPointer<(level: Int, q: Double)>
    ) {
        // The media range is the first non-empty piece between semicolons; the others are parameters.
        var media: ByteRange?
        var q = 1.0
        line.forEachPart(of: part, separatedBy: UInt8(ascii: ";")) { piece in
            if piece.isEmpty { return }
            if media == nil {
                media = piece
                return
            }
            let parameter = piece.trimming(line) { $0.isOWS }
            if parameter.count >= 2, line[parameter.start].asciiLowercased == UInt8(ascii: "q"),
                line[parameter.start + 1] == UInt8(ascii: "=")
            {
                q = DoubleQuality.parse(line, ByteRange(start: parameter.start + 2, end: parameter.end), lowercasing: true)
            }
        }
        guard var range = media?.trimming(line, { $0.isOWS }) else { return }
        // `type/subtype`: leading slashes are skipped, the type runs to the next slash, the subtype is all the rest.
        while range.start < range.end, line[range.start] == UInt8(ascii: "/") { range.start += 1 }
        var slash = range.start
        while slash < range.end, line[slash] != UInt8(ascii: "/") { slash += 1 }
        guard slash < range.end - 1 else { return }
        let type = ByteRange(start: range.start, end: slash)
        let subtype = ByteRange(start: slash + 1, end: range.end)
        let anyType = type.count == 1 && line[type.start] == UInt8(ascii: "*")
        let anySubtype = subtype.count == 1 && line[subtype.start] == UInt8(ascii: "*")
        for index in 0..<offers.count {
            let level: Int
            let typeMatches = offers.types[index].withUnsafeBufferPointer { line.equals(type, $0, foldingCase: true) }
            if typeMatches, offers.subtypes[index].withUnsafeBufferPointer({ line.equals(subtype, $0, foldingCase: true) }) {
                level = 2
            } else if typeMatches, anySubtype {
                level = 1
            } else if anyType, anySubtype {
                level = 0
            } else {
                continue
            }
            if level > state[index].level { state[index] = (level, q) }
        }
    }
}
