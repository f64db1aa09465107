internal import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

// RFC 9112 strictness, checked when a request's header block is complete and before any body byte is read.
//
// libmicrohttpd 0.9.75 checks little of it itself. Measured with a C server on it, `MHD_OPTION_STRICT_FOR_CLIENT`
// at -1, 0 (its default) and 1:
// - accepted at every level: two differing Content-Length lines (the first wins), Content-Length with
//   Transfer-Encoding (Transfer-Encoding wins), obs-fold (the lines are joined with no separator), control
//   characters in a value, a NUL in a value (the value is cut there), an empty field name (the line is dropped),
//   `%00` in the path (the path is cut there), two Host lines;
// - whitespace before the colon: refused (400, HTML) only at -1 (an inverted test in its connection.c); at 0 and 1
//   the space stays in the field name;
// - a space in the target: accepted at -1 and 0, the connection closed without an answer at 1;
// - an HTTP/1.1 request without Host: refused only at 1, 400 with its header block sent twice;
// - a transfer coding other than chunked: the body is read until the connection closes, no answer;
// - refused at every level, before any callback of ours: a line without a colon (400, HTML), a Content-Length that
//   is not one number (400) or beyond 64 bits (413), both with the header block sent twice, and a request line
//   beyond the connection's memory (414, HTML). The connection closes after each (LibmicrohttpdRefusalTests).
// No level covers a case without answering it with an HTML body of its own, so the server keeps the default (0)
// and checks every case here, answering through ``HTTPHandler/refuse(_:)`` with a problem document.
//
// What makes the header block checkable after libmicrohttpd parsed it: it parses in place. Every field's name and
// value point into its read buffer, field lines one after the other, each line end (CRLF or LF) overwritten with
// NUL bytes, the colon too. A line that does not follow the previous one directly was moved: libmicrohttpd copies
// a folded field elsewhere to join its lines. A value that ends before its line does held a NUL byte. The block's
// size (`MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE`) shows a dropped line after the last field.

/// A value of `*req_cls` that is not a ``PendingRequest``: an odd bit pattern (object addresses are 16-byte
/// aligned), so telling the two apart needs no allocation and no lookup. Bits 1–2 hold the kind, 3–7 a target's
/// flags, 8–31 where the raw query starts in the target, 32–39 the query byte the target callback overwrote
/// (pointers are 64 bits on every platform the server builds for).
struct RequestMarker: Equatable {
    enum Kind: UInt {
        /// Set by the request-target callback, for the access handler's first call.
        case target = 0
        /// A GET or HEAD whose headers passed every check: answer on the next call.
        case headersSeen = 1
        /// Answered (refused) on the first call: nothing more to do for this request.
        case answered = 2
    }

    var kind: Kind
    var flags: TargetFlags = []
    /// The offset in the raw target of the query's first byte (after `?`); 0 when there is no query.
    var queryOffset = 0
    /// The query's first byte, overwritten with NUL by ``targetReceived`` (see there) until the access handler's
    /// first call puts it back.
    var savedByte: UInt8 = 0

    /// The largest ``queryOffset`` a marker holds (far beyond any request line libmicrohttpd's memory takes).
    static let maxQueryOffset = 1 << 24 - 1

    init(_ kind: Kind, flags: TargetFlags = [], queryOffset: Int = 0, savedByte: UInt8 = 0) {
        self.kind = kind
        self.flags = flags
        self.queryOffset = queryOffset
        self.savedByte = savedByte
    }

    /// The marker `pointer` holds; nil for nil or a ``PendingRequest``.
    init?(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer, Self.isMarker(pointer) else { return nil }
        let value = UInt(bitPattern: pointer)
        // No marker is made with kind 3; an odd value is never taken for an object either way.
        self.kind = Kind(rawValue: value >> 1 & 3) ?? .answered
        self.flags = TargetFlags(rawValue: UInt8(value >> 3 & 0x1F))
        self.queryOffset = Int(value >> 8 & UInt(Self.maxQueryOffset))
        self.savedByte = UInt8(value >> 32 & 0xFF)
    }

    /// The marker as a `*req_cls` value.
    var pointer: UnsafeMutableRawPointer {
        let value =
            1 | kind.rawValue << 1 | UInt(flags.rawValue & 0x1F) << 3 | UInt(min(queryOffset, Self.maxQueryOffset)) << 8
            | UInt(savedByte) << 32
        // Safety: an odd bit pattern is never a valid object address; markers are only decoded, never dereferenced.
        return UnsafeMutableRawPointer(bitPattern: value).unsafelyUnwrapped
    }

    static var answered: UnsafeMutableRawPointer { RequestMarker(.answered).pointer }

    /// Whether `pointer` is a marker rather than a retained ``PendingRequest``.
    static func isMarker(_ pointer: UnsafeMutableRawPointer) -> Bool { UInt(bitPattern: pointer) & 1 == 1 }
}

/// What the request-target callback saw in the raw request line.
struct TargetFlags: OptionSet {
    let rawValue: UInt8
    /// The request line says HTTP/1.1 (Host is required).
    static let http11 = TargetFlags(rawValue: 1)
    /// A space or control character in the raw target, or a percent-escape of a control character (`%00`–`%1F`,
    /// `%7F`), which would otherwise be decoded into the path or a query value (a `%00` cut paths short).
    static let malformed = TargetFlags(rawValue: 2)
    /// The target is longer than ``HTTPServerConfiguration/maxTargetBytes``.
    static let tooLong = TargetFlags(rawValue: 4)
    /// The query has more arguments than ``HTTPServerConfiguration/maxQueryParameters``.
    static let tooManyParameters = TargetFlags(rawValue: 8)
}

/// `MHD_OPTION_URI_LOG_CALLBACK`: called with the raw target (path and query, not yet decoded) as soon as the
/// request line is in. Its result becomes the request's `*req_cls` until the access handler's first call.
///
/// It also keeps libmicrohttpd 0.9.75 from parsing the query, by writing a NUL over the query's first byte (saved
/// in the marker, put back on the access handler's first call). libmicrohttpd stores each query argument as a
/// 56-byte record (64 with the pool's alignment) in the connection's memory pool, beside the request line and
/// the header block; when the pool runs out (about 285 arguments in a 1.9 KB target with our pool, fewer when the
/// client sent more of its header block at once), `connection_add_header` queues a 431 and frees the read
/// buffer, but `parse_initial_message_line` ignores `MHD_parse_arguments_`'s failure, the state machine moves on
/// to reading header lines into a buffer of size 0, and the connection is closed without an answer or sits
/// unanswered until the header deadline (connection.c and internal.c of 0.9.75; both measured). libmicrohttpd finds the `?` before this callback and parses the
/// arguments after it, from the same buffer: an empty string there leaves it nothing to parse. The server reads
/// the query itself (``RawQuery``), and bounds the number of arguments (``TargetFlags/tooManyParameters``).
let targetReceived: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = {
    cls, uri, connection in
    guard let cls, let uri else { return RequestMarker(.target, flags: .malformed).pointer }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    if let connection { connectionClock(connection)?.requestLineArrived() }
    let configuration = core.configuration
    var marker = inspectTarget(uri, limit: configuration.maxTargetBytes, maxParameters: configuration.maxQueryParameters)
    if marker.queryOffset > 0 {
        // Safety: `uri` points into libmicrohttpd's read buffer (the request line, parsed in place; `const` only in
        // the callback's C type), and `queryOffset` is within the NUL-terminated target just scanned.
        let query = UnsafeMutablePointer(mutating: uri) + marker.queryOffset
        marker.savedByte = UInt8(bitPattern: query.pointee)
        query.pointee = 0
    }
    return marker.pointer
}

/// Scans a raw request target (NUL-terminated, as libmicrohttpd cut it from the request line) once: its flags, and
/// where its query starts when it has a non-empty one.
func inspectTarget(_ uri: UnsafePointer<CChar>, limit: Int, maxParameters: Int) -> RequestMarker {
    let bytes = UnsafeRawPointer(uri).assumingMemoryBound(to: UInt8.self)
    var flags: TargetFlags = []
    var queryOffset = 0
    var separators = 0
    var index = 0
    while bytes[index] != 0 {
        let byte = bytes[index]
        if byte <= 0x20 || byte == 0x7F {
            flags.insert(.malformed)
        } else if byte == UInt8(ascii: "%"), let high = hexDigit(bytes[index + 1]), let low = hexDigit(bytes[index + 2]) {
            // `bytes[index + 2]` is read only when `bytes[index + 1]` was a hex digit, so never past the NUL.
            let decoded = high << 4 | low
            if decoded < 0x20 || decoded == 0x7F { flags.insert(.malformed) }
        } else if byte == UInt8(ascii: "?"), queryOffset == 0 {
            queryOffset = index + 1
        } else if byte == UInt8(ascii: "&"), queryOffset > 0 {
            separators += 1
        }
        index += 1
    }
    if index > limit { flags.insert(.tooLong) }
    // An empty query ("/path?") has nothing to parse: no offset.
    if queryOffset == index || queryOffset > RequestMarker.maxQueryOffset { queryOffset = 0 }
    if queryOffset > 0, separators + 1 > maxParameters { flags.insert(.tooManyParameters) }
    // libmicrohttpd ends the target with the NUL it wrote over the space before "HTTP/1.1"; the comparison stops
    // at the first byte that differs, at the latest at the NUL that ends the line.
    if matches(bytes + index + 1, "HTTP/1.1") { flags.insert(.http11) }
    return RequestMarker(.target, flags: flags, queryOffset: queryOffset)
}

/// What one pass over a request's header fields found (`MHD_get_connection_values_n`).
struct HeaderBlockFacts {
    /// The first RFC 9112 violation, as a sentence for a problem document. Static text and the buffer below keep
    /// the facts a plain value: scanned on every request, copied without reference counting.
    var violation: StaticString?
    var contentLengthLines = 0
    /// The first Content-Length line's value (nil when absent; `Int.max` when it does not fit).
    var contentLength: Int?
    var transferEncodingLines = 0
    /// The first Transfer-Encoding line's value, trimmed, when it is not exactly `chunked` (libmicrohttpd's bytes: valid
    /// during the access handler's call, as the facts are).
    var unsupportedCoding: UnsafeBufferPointer<UInt8>?
    var chunked = false
    var hostLines = 0
    /// One past the last byte of the last field value.
    var blockEnd: UnsafePointer<UInt8>?
    /// The request line and header block in bytes, line ends and the empty line included (as libmicrohttpd
    /// counted them: the query string counts).
    var size = 0
    fileprivate var fields = 0

    /// Checks the fields of `connection` in the order they were received; `requestLine` is the start of the
    /// request line (libmicrohttpd's method pointer).
    static func scan(_ connection: OpaquePointer, requestLine: UnsafePointer<UInt8>) -> HeaderBlockFacts {
        var facts = HeaderBlockFacts()
        facts.size = cmhd_request_header_size(connection)
        withUnsafeMutablePointer(to: &facts) { pointer in
            _ = MHD_get_connection_values_n(connection, MHD_ValueKind.HEADER_KIND, fieldReceived, pointer)
        }
        // After the last value come its line end and the empty line: two to four bytes, all NUL now. More, or
        // bytes that are not NUL, mean a line libmicrohttpd dropped (an empty field name) or a value it cut at a
        // NUL byte.
        if facts.violation == nil, let end = facts.blockEnd, facts.size > 0 {
            let tail = requestLine + facts.size - end
            if !(2...4).contains(tail) || (0..<tail).contains(where: { end[$0] != 0 }) {
                facts.violation = "a header field line has an empty name or contains a NUL byte"
            }
        }
        return facts
    }

    /// Records one field line; false (stop) at the first violation.
    fileprivate mutating func inspect(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let start = name.baseAddress, let valueStart = value.baseAddress else {
            violation = "a header field could not be read"
            return false
        }
        defer { fields += 1 }
        if let previousEnd = blockEnd {
            // The previous line's end: one (LF) or two (CRLF) bytes, each overwritten with NUL by libmicrohttpd.
            let gap = start - previousEnd
            guard gap == 1 || gap == 2, previousEnd[0] == 0, start[-1] == 0 else {
                violation = "a header field line is folded (obs-fold) or contains a NUL byte"
                return false
            }
        } else {
            // The first field follows the request line, which ends in "HTTP/1.x" and CRLF or LF.
            let lineEnd = start[-2] == 0 ? start - 2 : start - 1
            guard start[-1] == 0, matches(lineEnd - 8, "HTTP/1.") else {
                violation = "a header field line is folded (obs-fold) or contains a NUL byte"
                return false
            }
        }
        blockEnd = valueStart + value.count
        guard !name.isEmpty else {
            violation = "a header field has an empty name"
            return false
        }
        for byte in name where !isTokenByte(byte) {
            violation =
                byte == 0x20 || byte == 0x09
                ? "whitespace between a header field name and its colon" : "a header field name contains a character a token does not allow"
            return false
        }
        if containsControlByte(value) {
            violation = "a header field value contains a control character"
            return false
        }
        if equalsIgnoringCase(name, "host") {
            hostLines += 1
        } else if equalsIgnoringCase(name, "content-length") {
            contentLengthLines += 1
            if contentLengthLines == 1 { contentLength = parseLength(trimmed(value)) }
        } else if equalsIgnoringCase(name, "transfer-encoding") {
            transferEncodingLines += 1
            let coding = trimmed(value)
            if transferEncodingLines == 1 {
                if equalsIgnoringCase(coding, "chunked") {
                    chunked = true
                } else {
                    unsupportedCoding = coding
                }
            }
        }
        return true
    }

    /// The first RFC 9112 message-framing violation of this request, given what its request line said.
    func framingViolation(http11: Bool) -> RequestRefusal? {
        if let violation { return .malformed(violation.description) }
        if hostLines > 1 { return .malformed("more than one Host field") }
        if http11 && hostLines == 0 { return .malformed("an HTTP/1.1 request without a Host field") }
        if contentLengthLines > 1 { return .malformed("more than one Content-Length field line") }
        if contentLengthLines == 1 && contentLength == nil { return .malformed("Content-Length is not a number") }
        guard transferEncodingLines > 0 else { return nil }
        if contentLengthLines > 0 { return .malformed("Content-Length together with Transfer-Encoding") }
        if !http11 { return .malformed("Transfer-Encoding in an HTTP/1.0 request") }
        if transferEncodingLines > 1 { return .malformed("more than one Transfer-Encoding field line") }
        if let unsupportedCoding { return .transferCodingNotImplemented(String(decoding: unsupportedCoding, as: UTF8.self)) }
        return nil
    }

    /// Whether the request announces a body (a non-zero Content-Length, or chunked).
    var announcesBody: Bool { chunked || (contentLength ?? 0) > 0 }
}

/// `MHD_KeyValueIteratorN` over header fields into a ``HeaderBlockFacts``.
private let fieldReceived: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
    guard let cls, let key else { return MHD_Result.NO }
    let facts = cls.assumingMemoryBound(to: HeaderBlockFacts.self)
    let name = UnsafeBufferPointer(start: UnsafeRawPointer(key).assumingMemoryBound(to: UInt8.self), count: keySize)
    let valueBytes = UnsafeBufferPointer(
        start: value.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }, count: value == nil ? 0 : valueSize)
    return facts.pointee.inspect(name: name, value: valueBytes) ? MHD_Result.YES : MHD_Result.NO
}

/// Whether a field value holds a control character (below 0x20 except tab, or DEL): eight bytes at a time, and byte by
/// byte only in a word that may hold one (values are read once per request, on the hot path).
@inline(__always)
func containsControlByte(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
    func isControl(_ byte: UInt8) -> Bool { (byte < 0x20 && byte != 0x09) || byte == 0x7F }
    guard let base = value.baseAddress else { return false }
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highBits: UInt64 = 0x8080_8080_8080_8080
    var index = 0
    while index + 8 <= value.count {
        let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
        // Some byte < 0x20 (tab included), or some byte == 0x7F (a zero byte of word ^ 0x7F…): exact as a test,
        // and bytes ≥ 0x80 (obs-text, allowed) never set it.
        let below = (word &- ones &* 0x20) & ~word & highBits
        let flipped = word ^ (ones &* 0x7F)
        let delete = (flipped &- ones) & ~flipped & highBits
        if below | delete != 0, (index..<index + 8).contains(where: { isControl(base[$0]) }) { return true }
        index += 8
    }
    return (index..<value.count).contains { isControl(base[$0]) }
}

/// RFC 9110 §5.6.2 `tchar`.
@inline(__always)
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
        true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
        UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
        UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        true
    default: false
    }
}

/// Whether `bytes` starts with `expected` (ASCII); reads no further than the first byte that differs.
func matches(_ bytes: UnsafePointer<UInt8>, _ expected: StaticString) -> Bool {
    let count = expected.utf8CodeUnitCount
    let prefix = expected.utf8Start
    for index in 0..<count where bytes[index] != prefix[index] { return false }
    return true
}

/// ASCII case-insensitive equality with a lowercase literal.
func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
    guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
    let expected = lowercase.utf8Start
    for index in 0..<bytes.count where bytes[index] | (bytes[index] &- 0x41 < 26 ? 0x20 : 0) != expected[index] {
        return false
    }
    return true
}

/// `bytes` without leading and trailing spaces and tabs (RFC 9110 OWS).
func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
    var lower = 0
    var upper = bytes.count
    while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
    while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
    return UnsafeBufferPointer(rebasing: bytes[lower..<upper])
}

/// A Content-Length value: 1DIGIT+, saturating at `Int.max`; nil for anything else.
private func parseLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    guard !bytes.isEmpty else { return nil }
    var value = 0
    for byte in bytes {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflowB) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
        if overflowA || overflowB { return Int.max }
        value = sum
    }
    return value
}

private func hexDigit(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// Puts back the query byte ``targetReceived`` overwrote, on the access handler's first call (libmicrohttpd is
/// done with the request line then); returns where the query starts in the target, 0 for none. `url` is
/// libmicrohttpd's `connection->url`: in 0.9.75 the very address of the raw target the callback saw, its path
/// decoded in place up to the NUL libmicrohttpd wrote over the `?`, the query after it untouched.
func restoreQuery(_ url: UnsafePointer<CChar>, _ marker: RequestMarker) -> Int {
    guard marker.queryOffset > 0 else { return 0 }
    let query = UnsafeMutablePointer(mutating: url) + marker.queryOffset
    // The NUL the callback wrote; anything else would mean the target was moved, and then no query is read.
    guard query.pointee == 0 else { return 0 }
    query.pointee = CChar(bitPattern: marker.savedByte)
    return marker.queryOffset
}
