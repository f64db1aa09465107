internal import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

/// A complete request, as libmicrohttpd holds it or made of plain values (``init(method:path:query:headers:body:clientAddress:)``,
/// for running handlers in process: tests, replays). One concrete type, so that handlers can be stored in a table.
///
/// A request from the daemon is valid only during ``HTTPHandler/handle(_:)``: the path and header bytes it hands
/// out point into libmicrohttpd's memory for that call only. Copy what deferred work needs before returning a
/// ``HTTPReply/deferred(_:)`` reply.
public struct HTTPRequest: ~Copyable {
    public let method: HTTPMethod
    /// The body (empty for GET and HEAD).
    public let body: [UInt8]
    let source: Source
    /// What ``HTTPHandler/admit(_:)`` noted for this request (``Admission/proceedNoting(_:)``), nil otherwise.
    public let admission: (any Sendable)?
    /// The request's field lines, read once on first use (see ``FieldIndex``); nil: each lookup asks libmicrohttpd.
    let fieldIndex: UnsafeMutablePointer<FieldIndex>?

    /// Where the request's fields are read from.
    enum Source {
        /// libmicrohttpd's connection, its decoded URL (NUL-terminated) and where the raw query starts from the URL
        /// (0: none; the server parses the query itself, see ``targetReceived``), valid during the handler's call.
        case daemon(connection: OpaquePointer, url: UnsafePointer<CChar>, queryOffset: Int)
        /// Plain values.
        case values(RequestValues)
    }

    init(
        method: HTTPMethod, body: [UInt8], connection: OpaquePointer, url: UnsafePointer<CChar>, queryOffset: Int,
        admission: (any Sendable)? = nil, fieldIndex: UnsafeMutablePointer<FieldIndex>? = nil
    ) {
        self.method = method
        self.body = body
        self.admission = admission
        self.fieldIndex = fieldIndex
        self.source = .daemon(connection: connection, url: url, queryOffset: queryOffset)
    }

    /// A request made of values, not read from a connection: it runs through a handler exactly as one from the
    /// socket does. `path` is percent-decoded; `query` holds decoded names and values in order; `admission` is what
    /// an admission noted, as the server hands it over.
    public init(
        method: HTTPMethod, path: String, query: [(String, String)] = [], headers: [(String, String)] = [], body: [UInt8] = [],
        clientAddress: String = "127.0.0.1", admission: (any Sendable)? = nil
    ) {
        self.method = method
        self.body = body
        self.admission = admission
        self.fieldIndex = nil
        self.source = .values(RequestValues(path: path, query: query, headers: headers, clientAddress: clientAddress))
    }

    /// The query as sent (after `?`, not decoded), in libmicrohttpd's memory; nil for a request made of values.
    var rawQuery: RawQuery? {
        guard case .daemon(_, let url, let queryOffset) = source else { return nil }
        guard queryOffset > 0 else { return RawQuery(bytes: UnsafeBufferPointer(start: nil, count: 0)) }
        let start = UnsafeRawPointer(url + queryOffset)
        return RawQuery(bytes: UnsafeBufferPointer(start: start.assumingMemoryBound(to: UInt8.self), count: strlen(url + queryOffset)))
    }

    /// The percent-decoded path, without the query, as bytes (no copy).
    public var pathBytes: UnsafeBufferPointer<UInt8> {
        switch source {
        case .daemon(_, let url, _):
            UnsafeBufferPointer(start: UnsafeRawPointer(url).assumingMemoryBound(to: UInt8.self), count: strlen(url))
        case .values(let values):
            UnsafeBufferPointer(values.pathBytes)
        }
    }

    /// The percent-decoded path, without the query.
    public var path: String {
        switch source {
        case .daemon(_, let url, _): String(cString: url)
        case .values(let values): values.path
        }
    }

    /// A request header's value (names compare case-insensitively); repeated fields give the first.
    /// The corresponding C function is `MHD_lookup_connection_value`.
    public func header(_ name: String) -> String? {
        switch source {
        case .daemon:
            // Through the request's field index when it has one (one walk of libmicrohttpd's list per request).
            withHeader(name) { $0.map { String(decoding: $0, as: UTF8.self) } }
        case .values(let values): values.headers(named: name).first
        }
    }

    /// Calls `body` with a header's bytes (no copy), or nil when the request has no such header.
    /// Inlined so that the caller's `R` is concrete: a generic body resolved at run time cost a metadata lookup per
    /// call on the read path.
    @inlinable
    public func withHeader<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        var result: R?
        visitHeader(name) { result = body($0) }
        // `visitHeader` calls its closure exactly once.
        return result.unsafelyUnwrapped
    }

    /// ``withHeader(_:_:)`` without a generic result: calls `body` exactly once.
    @usableFromInline
    func visitHeader(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        guard case .daemon(let connection, _, _) = source else {
            guard let value = header(name) else { return body(nil) }
            return Array(value.utf8).withUnsafeBufferPointer { body($0) }
        }
        if let fieldIndex, fieldIndex.pointee.isReady(connection) {
            var name = name
            return name.withUTF8 { body(fieldIndex.pointee.firstValue(named: $0)) }
        }
        guard let value = Self.lookup(connection, MHD_ValueKind.HEADER_KIND, name) else { return body(nil) }
        body(
            UnsafeBufferPointer(
                start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), count: strlen(value)))
    }

    /// Every value of a header that may repeat (`If-Match`, `Accept`), joined with ", " as RFC 9110 §5.3 allows.
    public func headerList(_ name: String) -> String? {
        let found: [String]
        switch source {
        case .daemon(let connection, _, _): found = Self.allValues(connection, MHD_ValueKind.HEADER_KIND, name, HeaderCollector.collect)
        case .values(let values): found = values.headers(named: name)
        }
        return found.isEmpty ? nil : found.joined(separator: ", ")
    }

    /// Calls `body` with a field's value combined over all its field lines, or nil when the request has no such
    /// field. RFC 9110 §5.3: a recipient may combine field lines into one comma-separated list, as a shared cache
    /// does; reading only the first line would answer a different request than the one the cache keys on.
    /// Each line's value is trimmed of surrounding whitespace; lines are joined with ", " in the order received.
    /// One line (the usual case) is handed over as libmicrohttpd holds it, with no copy and no allocation; several
    /// are joined in a temporary buffer (on the stack when small) valid only during `body`.
    /// The corresponding C function is `MHD_get_connection_values_n`.
    @inlinable
    public func withCombinedHeader<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        // Inlined so that the caller's `R` is concrete (see ``withHeader(_:_:)``).
        var result: R?
        visitCombinedHeader(name) { result = body($0) }
        // `visitCombinedHeader` calls its closure exactly once.
        return result.unsafelyUnwrapped
    }

    /// ``withCombinedHeader(_:_:)`` without a generic result: calls `body` exactly once.
    @usableFromInline
    func visitCombinedHeader(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        guard case .daemon(let connection, _, _) = source else {
            guard case .values(let values) = source else { return body(nil) }
            let lines = values.headers(named: name).map { $0.trimmingFieldWhitespace() }
            guard !lines.isEmpty else { return body(nil) }
            return Array(lines.joined(separator: ", ").utf8).withUnsafeBufferPointer { body($0) }
        }
        var name = name
        // The index, when it holds every line (nil: walk libmicrohttpd's list).
        let index = fieldIndex.flatMap { $0.pointee.isReady(connection) ? $0 : nil }
        name.withUTF8 { nameBytes in
            var collector = FieldLineCollector(name: nameBytes)
            // One pass over the lines: from the index when it holds them all, else libmicrohttpd's list.
            func collect() {
                if let index {
                    index.pointee.forEachValue(named: nameBytes) { collector.add(trimmed($0)) }
                } else {
                    withUnsafeMutablePointer(to: &collector) { pointer in
                        _ = MHD_get_connection_values_n(connection, MHD_ValueKind.HEADER_KIND, FieldLineCollector.visit, pointer)
                    }
                }
            }
            collect()
            switch collector.lines {
            case 0: body(nil)
            case 1: body(collector.first)
            default:
                let capacity = collector.totalBytes + 2 * (collector.lines - 1)
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
                    collector.output = buffer
                    collect()
                    body(UnsafeBufferPointer(rebasing: buffer[..<collector.written]))
                }
            }
        }
    }

    /// A field's value combined over all its field lines (see ``withCombinedHeader(_:_:)``), as a String.
    public func combinedHeader(_ name: String) -> String? {
        withCombinedHeader(name) { bytes in bytes.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// A query argument's decoded value (`?locale=fr`); nil when absent or when its first occurrence has no `=`.
    public func query(_ name: String) -> String? {
        switch source {
        case .daemon: rawQuery?.first(named: name)
        // As the raw query is read: names compare ignoring case.
        case .values(let values): values.query.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    /// The peer's IP address as text (`127.0.0.1`, `::1`), or "unknown". The corresponding C function is
    /// `MHD_get_connection_info` with `MHD_CONNECTION_INFO_CLIENT_ADDRESS`.
    public var clientAddress: String {
        let connection: OpaquePointer
        switch source {
        case .daemon(let daemonConnection, _, _): connection = daemonConnection
        case .values(let values): return values.clientAddress
        }
        guard let address = cmhd_client_address(connection) else { return "unknown" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var raw = v4.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)) != nil ? Self.text(text) : "unknown"
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var raw = v6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)) != nil ? Self.text(text) : "unknown"
            }
        default:
            return "unknown"
        }
    }

    /// A NUL-terminated C string buffer as text.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Every value of a query argument given several times (`?locale=en&locale=fr`), in order ("" for one without
    /// `=`).
    public func queryValues(_ name: String) -> [String] {
        switch source {
        case .daemon: rawQuery?.values(named: name) ?? []
        case .values(let values): values.query.filter { $0.0 == name }.map(\.1)
        }
    }

    /// Every value named `name` of one kind, in order. The corresponding C function is `MHD_get_connection_values`.
    private static func allValues(
        _ connection: OpaquePointer, _ kind: MHD_ValueKind, _ name: String, _ collect: MHD_KeyValueIterator
    ) -> [String] {
        var values: [String] = []
        withUnsafeMutablePointer(to: &values) { pointer in
            let context = HeaderCollector(name: name, values: pointer)
            withUnsafePointer(to: context) { contextPointer in
                _ = MHD_get_connection_values(connection, kind, collect, UnsafeMutableRawPointer(mutating: contextPointer))
            }
        }
        return values
    }

    private static func lookup(_ connection: OpaquePointer, _ kind: MHD_ValueKind, _ name: String) -> UnsafePointer<CChar>? {
        name.withCString { MHD_lookup_connection_value(connection, kind, $0) }
    }
}

/// The fields of a request made of values. The path's bytes live as long as this object, so that
/// ``HTTPRequest/pathBytes`` can hand them out as the daemon's request does.
final class RequestValues {
    let path: String
    /// Allocated here and freed at deinit: as stable as the daemon's URL is during a handler's call.
    let pathBytes: UnsafeMutableBufferPointer<UInt8>
    let query: [(String, String)]
    let headers: [(String, String)]
    let clientAddress: String

    init(path: String, query: [(String, String)], headers: [(String, String)], clientAddress: String) {
        self.path = path
        pathBytes = .allocate(capacity: path.utf8.count)
        _ = pathBytes.initialize(from: path.utf8)
        self.query = query
        self.headers = headers
        self.clientAddress = clientAddress
    }

    deinit { pathBytes.deallocate() }

    /// Every value of a header, in order (names compare case-insensitively).
    func headers(named name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.0.lowercased() == wanted }.map(\.1)
    }
}

extension String {
    /// Without the spaces and tabs around a field line's value (RFC 9110 §5.5).
    func trimmingFieldWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}

/// Collects the values of one header name through `MHD_get_connection_values`.
private struct HeaderCollector {
    let name: String
    let values: UnsafeMutablePointer<[String]>

    static let collect: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls, let key else { return MHD_Result.YES }
        let collector = cls.assumingMemoryBound(to: HeaderCollector.self).pointee
        if String(cString: key).lowercased() == collector.name.lowercased() {
            collector.values.pointee.append(value.map { String(cString: $0) } ?? "")
        }
        return MHD_Result.YES
    }
}
