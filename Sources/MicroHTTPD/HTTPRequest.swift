internal import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

/// A complete request as libmicrohttpd holds it. Valid only during ``HTTPHandler/handle(_:)``:
/// the path and header bytes it hands out point into libmicrohttpd's memory for that call only.
/// Copy what deferred work needs before returning a ``HTTPReply/deferred(_:)`` reply.
public struct HTTPRequest {
    public let method: HTTPMethod
    /// The body (empty for GET and HEAD).
    public let body: [UInt8]
    let connection: OpaquePointer
    let url: UnsafePointer<CChar>

    init(method: HTTPMethod, body: [UInt8], connection: OpaquePointer, url: UnsafePointer<CChar>) {
        self.method = method
        self.body = body
        self.connection = connection
        self.url = url
    }

    /// The percent-decoded path, without the query, as bytes (no copy).
    public var pathBytes: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(
            start: UnsafeRawPointer(url).assumingMemoryBound(to: UInt8.self), count: strlen(url))
    }

    /// The percent-decoded path, without the query.
    public var path: String { String(cString: url) }

    /// A request header's value (names compare case-insensitively); repeated fields give the first.
    /// The corresponding C function is `MHD_lookup_connection_value`.
    public func header(_ name: String) -> String? {
        lookup(MHD_ValueKind.HEADER_KIND, name).map { String(cString: $0) }
    }

    /// Calls `body` with a header's bytes (no copy), or nil when the request has no such header.
    public func withHeader<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard let value = lookup(MHD_ValueKind.HEADER_KIND, name) else { return body(nil) }
        return body(
            UnsafeBufferPointer(
                start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), count: strlen(value)))
    }

    /// Every value of a header that may repeat (`If-Match`, `Accept`), joined with ", " as RFC 9110 §5.3 allows.
    public func headerList(_ name: String) -> String? {
        var values: [String] = []
        withUnsafeMutablePointer(to: &values) { pointer in
            let context = HeaderCollector(name: name, values: pointer)
            withUnsafePointer(to: context) { contextPointer in
                _ = MHD_get_connection_values(
                    connection, MHD_ValueKind.HEADER_KIND, HeaderCollector.collect,
                    UnsafeMutableRawPointer(mutating: contextPointer))
            }
        }
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// A query argument's decoded value (`?locale=fr`); an argument given without `=` gives "".
    public func query(_ name: String) -> String? {
        lookup(MHD_ValueKind.GET_ARGUMENT_KIND, name).map { String(cString: $0) }
    }

    private func lookup(_ kind: MHD_ValueKind, _ name: String) -> UnsafePointer<CChar>? {
        name.withCString { MHD_lookup_connection_value(connection, kind, $0) }
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
