/// An entity tag (RFC 9110 §8.8.3): an opaque string, weak or strong.
public struct EntityTag: Sendable, Hashable {
    /// The bytes between the quotes.
    public let opaque: [UInt8]
    /// Whether the tag was given as `W/"…"`.
    public let isWeak: Bool

    /// - Parameters:
    ///   - opaque: the text between the quotes (no `"` in it).
    ///   - isWeak: whether the tag is weak.
    public init(opaque: String, isWeak: Bool = false) {
        self.opaque = Array(opaque.utf8)
        self.isWeak = isWeak
    }

    /// Reads an `ETag` field value: `"…"` or `W/"…"`; nil for anything else.
    public init?(_ field: String) {
        var bytes = Array(field.utf8)[...]
        var weak = false
        if bytes.starts(with: [UInt8(ascii: "W"), UInt8(ascii: "/")]) {
            weak = true
            bytes = bytes.dropFirst(2)
        }
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else { return nil }
        let inner = bytes.dropFirst().dropLast()
        guard !inner.contains(UInt8(ascii: "\"")) else { return nil }
        opaque = Array(inner)
        isWeak = weak
    }

    /// The field value: `"…"` or `W/"…"`.
    public var field: String { (isWeak ? "W/\"" : "\"") + String(decoding: opaque, as: UTF8.self) + "\"" }
}

/// `If-None-Match` and `If-Match` (RFC 9110 §13.1.1, §13.1.2): does the list name the current representation?
public enum EntityTagList {
    /// Whether an `If-None-Match` field matches `current`: it is `*`, or one of its tags equals `current` by weak
    /// comparison (`W/` ignored on both sides). True means 304 for GET and HEAD (412 for other methods).
    ///
    /// Apache httpd's mod_deflate hands its clients `"abc-gzip"` for an origin's `"abc"` (`DeflateAlterETag
    /// AddSuffix`, the default) and those clients revalidate with it. Here such a tag also matches `"abc"`: the
    /// client holds a gzip of the very representation that is still current, so 304 is the true answer. This holds
    /// for weak comparison only (never in ``matchesStrongly(current:lines:)``), and it means no representation of
    /// this server may have an entity tag that ends in `-gzip` for a different content than the tag without it.
    /// Tags that are not quoted, and everything after a tag whose closing quote is missing, match nothing.
    /// - Complexity: O(n) for n bytes of field; allocates nothing.
    public static func matchesWeakly(current: EntityTag, lines: FieldLines) -> Bool {
        var matched = false
        current.opaque.withUnsafeBufferPointer { opaque in
            lines { line in
                if matched { return }
                matched = scan(line) { tag, _ in
                    guard let tag else { return true }
                    if line.equals(tag, opaque, foldingCase: false) { return true }
                    // mod_deflate's suffix: "<current>-gzip".
                    let suffix = gzipSuffix
                    guard tag.count == opaque.count + suffix.count,
                        line.equals(ByteRange(start: tag.start, end: tag.start + opaque.count), opaque, foldingCase: false)
                    else { return false }
                    return suffix.withUnsafeBufferPointer {
                        line.equals(ByteRange(start: tag.end - suffix.count, end: tag.end), $0, foldingCase: false)
                    }
                }
            }
        }
        return matched
    }

    /// Whether an `If-Match` field matches `current`: it is `*`, or one of its tags equals `current` by strong
    /// comparison (both strong, same bytes). False means 412. Weak tags never match. `*` always matches here, since
    /// there is a current representation; when there is none, `If-Match` fails without asking.
    /// - Complexity: O(n) for n bytes of field; allocates nothing.
    public static func matchesStrongly(current: EntityTag, lines: FieldLines) -> Bool {
        var matched = false
        current.opaque.withUnsafeBufferPointer { opaque in
            lines { line in
                if matched { return }
                matched = scan(line) { tag, weak in
                    guard let tag else { return true }
                    return !weak && !current.isWeak && line.equals(tag, opaque, foldingCase: false)
                }
            }
        }
        return matched
    }

    /// ``matchesWeakly(current:lines:)`` for lines held in a sequence.
    @inlinable
    public static func matchesWeakly(_ lines: some Sequence<FieldLine>, current: EntityTag) -> Bool {
        matchesWeakly(current: current) { yield in
            for line in lines { yield(line) }
        }
    }

    /// ``matchesStrongly(current:lines:)`` for lines held in a sequence.
    @inlinable
    public static func matchesStrongly(_ lines: some Sequence<FieldLine>, current: EntityTag) -> Bool {
        matchesStrongly(current: current) { yield in
            for line in lines { yield(line) }
        }
    }

    private static let gzipSuffix: [UInt8] = Array("-gzip".utf8)

    /// Calls `matches` with each element of the list in `line` (nil for `*`, else the opaque bytes and whether `W/`
    /// preceded them) until it returns true; returns whether it did.
    private static func scan(_ line: FieldLine, _ matches: (ByteRange?, Bool) -> Bool) -> Bool {
        var index = 0
        let end = line.count
        while index < end {
            let byte = line[index]
            if byte.isOWS || byte == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if byte == UInt8(ascii: "*") {
                if matches(nil, false) { return true }
                index += 1
                continue
            }
            var weak = false
            if byte == UInt8(ascii: "W"), index + 1 < end, line[index + 1] == UInt8(ascii: "/") {
                weak = true
                index += 2
            }
            if index < end, line[index] == UInt8(ascii: "\"") {
                let start = index + 1
                var close = start
                while close < end, line[close] != UInt8(ascii: "\"") { close += 1 }
                guard close < end else { return false }
                if matches(ByteRange(start: start, end: close), weak) { return true }
                index = close + 1
            } else {
                // Not an entity tag: skip to the next element.
                while index < end, line[index] != UInt8(ascii: ",") { index += 1 }
            }
        }
        return false
    }
}
