/// A content coding the server can send a representation in (RFC 9110 §8.4.1).
public enum ContentCoding: UInt8, Sendable, CaseIterable {
    /// No coding: the bytes as they are.
    case identity
    /// `gzip` (RFC 1952).
    case gzip
    /// `br`, brotli (RFC 7932).
    case br

    /// The token for `Content-Encoding`, nil for identity (which is never sent).
    public var token: String? {
        switch self {
        case .identity: nil
        case .gzip: "gzip"
        case .br: "br"
        }
    }
}

/// The compressed forms a representation has; identity always exists.
public struct AvailableCodings: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A gzip form exists.
    public static let gzip = AvailableCodings(rawValue: 1 << 0)
    /// A brotli form exists.
    public static let br = AvailableCodings(rawValue: 1 << 1)
}

/// The order in which codings of equal weight are preferred: the smallest representation first (RFC 9110 §12.5.3
/// leaves ties to the server; fewer bytes is what every client that lists several codings wants).
public struct CodingPreference: Sendable, Equatable {
    /// The codings from most to least preferred: always all three.
    public let order: (ContentCoding, ContentCoding, ContentCoding)

    /// `br`, then `gzip`, then identity: the order when sizes are unknown (brotli is usually the smallest).
    public static let brotliFirst = CodingPreference(order: (.br, .gzip, .identity))

    private init(order: (ContentCoding, ContentCoding, ContentCoding)) { self.order = order }

    /// The codings ordered by size, smallest first; a coding with no size (no such form) goes last, and equal sizes
    /// keep the ``brotliFirst`` order.
    /// - Parameters:
    ///   - identity: the identity form's byte count.
    ///   - gzip: the gzip form's byte count, nil when there is none.
    ///   - br: the brotli form's byte count, nil when there is none.
    public init(identity: Int, gzip: Int?, br: Int?) {
        var ranked: [(coding: ContentCoding, size: Int)] = [(.br, br ?? .max), (.gzip, gzip ?? .max), (.identity, identity)]
        // Three elements, stable: an insertion sort.
        for index in 1..<ranked.count {
            var position = index
            while position > 0, ranked[position].size < ranked[position - 1].size {
                ranked.swapAt(position, position - 1)
                position -= 1
            }
        }
        order = (ranked[0].coding, ranked[1].coding, ranked[2].coding)
    }

    public static func == (lhs: CodingPreference, rhs: CodingPreference) -> Bool {
        lhs.order.0 == rhs.order.0 && lhs.order.1 == rhs.order.1 && lhs.order.2 == rhs.order.2
    }
}

/// `Accept-Encoding` (RFC 9110 §12.5.3): which coding of a representation to send.
public enum AcceptEncoding {
    /// The coding to send, or nil when the client accepts none of those that exist (406).
    ///
    /// - No field: identity (RFC 9110 allows any coding then, but a client that did not ask, such as curl without
    ///   `--compressed`, should not get bytes it cannot read).
    /// - A field, even an empty one: each coding's q is its own entry's, else `*`'s, else 0. Identity's is its own
    ///   entry's, else `*`'s (so `identity;q=0`, or `*;q=0` without an `identity` entry, refuses it), else it is
    ///   acceptable but last: a client that lists only `gzip;q=0.5` gets gzip (RFC 9110 gives unlisted identity no
    ///   weight; ranking it below every listed coding is what the client's list means).
    ///   `x-gzip` is `gzip` (RFC 9110 §8.4.1.3). Of several entries for one coding the first counts. Names are
    ///   case-insensitive; unknown codings (`deflate`, `zstd`) are ignored.
    /// - The highest q above 0 wins; when equal, the first in `preference` (the smallest form first; without sizes,
    ///   `br` before `gzip` before identity).
    ///
    /// A weight is read as thousandths: `0.8`, `1`, `1.000`; more decimals are cut, values above 1 are 1, and anything
    /// else is 0.
    /// - Parameters:
    ///   - available: the compressed forms that exist for the representation.
    ///   - preference: which of equally weighted codings to send.
    ///   - lines: the field's lines (see ``FieldLines``).
    /// - Complexity: O(n) for n bytes of field; allocates nothing.
    public static func choose(
        available: AvailableCodings, preference: CodingPreference = .brotliFirst, lines: FieldLines
    ) -> ContentCoding? {
        var present = false
        var weights = Weights()
        lines { line in
            present = true
            line.forEachPart(of: line.whole, separatedBy: UInt8(ascii: ",")) { part in
                consider(part, in: line, weights: &weights)
            }
        }
        guard present else { return .identity }
        let star = weights.star
        let br = available.contains(.br) ? weights.br ?? star ?? 0 : 0
        let gzip = available.contains(.gzip) ? weights.gzip ?? star ?? 0 : 0
        // Unlisted identity: the least positive weight, so that it loses every tie and every listed coding wins.
        let identity = weights.identity ?? star ?? 1
        let best = max(br, gzip, identity)
        guard best > 0 else { return nil }
        let weight = { (coding: ContentCoding) in coding == .br ? br : coding == .gzip ? gzip : identity }
        let (first, second, third) = preference.order
        return weight(first) == best ? first : weight(second) == best ? second : third
    }

    /// ``choose(available:preference:lines:)`` for lines held in a sequence (an empty sequence is no field).
    @inlinable
    public static func choose(
        _ lines: some Sequence<FieldLine>, available: AvailableCodings, preference: CodingPreference = .brotliFirst
    ) -> ContentCoding? {
        choose(available: available, preference: preference) { yield in
            for line in lines { yield(line) }
        }
    }

    /// The first weight given to each coding the server knows, in thousandths.
    private struct Weights {
        var br: Int?
        var gzip: Int?
        var identity: Int?
        var star: Int?
    }

    private static let brName: [UInt8] = Array("br".utf8)
    private static let gzipName: [UInt8] = Array("gzip".utf8)
    private static let xGzipName: [UInt8] = Array("x-gzip".utf8)
    private static let identityName: [UInt8] = Array("identity".utf8)

    /// One comma-separated part: `codings [ OWS ";" OWS "q=" qvalue ]`.
    private static func consider(_ part: ByteRange, in line: FieldLine, weights: inout Weights) {
        var name: ByteRange?
        var q = 1000
        line.forEachPart(of: part, separatedBy: UInt8(ascii: ";")) { piece in
            let trimmed = piece.trimming(line) { $0.isOWS }
            guard name != nil else {
                name = trimmed
                return
            }
            if trimmed.count >= 2, line[trimmed.start].asciiLowercased == UInt8(ascii: "q"), line[trimmed.start + 1] == UInt8(ascii: "=") {
                q = Thousandths.parse(line, ByteRange(start: trimmed.start + 2, end: trimmed.end))
            }
        }
        guard let name, !name.isEmpty else { return }
        if name.count == 1, line[name.start] == UInt8(ascii: "*") {
            if weights.star == nil { weights.star = q }
        } else if brName.withUnsafeBufferPointer({ line.equals(name, $0, foldingCase: true) }) {
            if weights.br == nil { weights.br = q }
        } else if gzipName.withUnsafeBufferPointer({ line.equals(name, $0, foldingCase: true) })
            || xGzipName.withUnsafeBufferPointer({ line.equals(name, $0, foldingCase: true) })
        {
            if weights.gzip == nil { weights.gzip = q }
        } else if identityName.withUnsafeBufferPointer({ line.equals(name, $0, foldingCase: true) }) {
            if weights.identity == nil { weights.identity = q }
        }
    }
}
