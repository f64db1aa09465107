internal import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

/// A response built once and queued for any number of requests, from any thread.
///
/// Safety (`@unchecked Sendable`): the libmicrohttpd response is never changed after `init`, and
/// libmicrohttpd reference-counts it under its own mutex, so queuing it from every pool thread at once
/// is supported. The body buffer belongs to libmicrohttpd (freed by `free` when its last reference
/// goes), so a request still sending it outlives this object safely.
public final class PreparedResponse: @unchecked Sendable {
    /// The status line's code.
    public let status: Int
    /// The header fields given at creation (libmicrohttpd adds `Date` and `Content-Length` when sending).
    public let headers: [HTTPHeader]
    let pointer: OpaquePointer
    /// The body buffer libmicrohttpd sends from; alive as long as `pointer` is (our reference keeps it).
    private let buffer: UnsafeRawBufferPointer

    /// Builds the response. The corresponding C functions are
    /// `MHD_create_response_from_buffer_with_free_callback` and `MHD_add_response_header`.
    /// - Throws: ``MicroHTTPDError/responseCreationFailed`` when libmicrohttpd cannot allocate it.
    public init(status: Int, headers: [HTTPHeader], body: [UInt8]) throws(MicroHTTPDError) {
        guard let (pointer, buffer) = makeResponseKeepingBuffer(headers: headers, body: body) else {
            throw .responseCreationFailed
        }
        self.status = status
        self.headers = headers
        self.pointer = pointer
        self.buffer = buffer
    }

    /// A copy of the body (for in-process tests and tools; the server sends from libmicrohttpd's buffer).
    public var body: [UInt8] { Array(buffer) }

    deinit {
        // Drops our reference only; requests still sending it hold theirs (see the type's Safety note).
        MHD_destroy_response(pointer)
    }
}

/// A libmicrohttpd response owning a malloc'd copy of `body`, which libmicrohttpd frees with the response.
func makeResponse(headers: [HTTPHeader], body: [UInt8]) -> OpaquePointer? {
    makeResponseKeepingBuffer(headers: headers, body: body)?.response
}

/// ``makeResponse(headers:body:)``, also giving the body buffer (valid while a reference to the response is held).
func makeResponseKeepingBuffer(headers: [HTTPHeader], body: [UInt8]) -> (response: OpaquePointer, buffer: UnsafeRawBufferPointer)? {
    let buffer = malloc(max(body.count, 1))
    guard let buffer else { return nil }
    body.withUnsafeBytes { bytes in
        if let base = bytes.baseAddress { memcpy(buffer, base, bytes.count) }
    }
    // libmicrohttpd calls `free` on `buffer` when the response's last reference is dropped.
    guard let response = MHD_create_response_from_buffer_with_free_callback(body.count, buffer, free) else {
        free(buffer)
        return nil
    }
    for header in headers {
        _ = MHD_add_response_header(response, header.name, header.value)
    }
    return (response, UnsafeRawBufferPointer(start: buffer, count: body.count))
}
