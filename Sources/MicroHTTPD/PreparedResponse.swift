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
    /// The length `Content-Length` announces: the body's, or for a bodiless response the length it was given.
    public let announcedLength: Int
    let pointer: OpaquePointer
    /// The body buffer libmicrohttpd sends from; alive as long as `pointer` is (our reference keeps it). Empty for
    /// a bodiless response.
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
        self.announcedLength = body.count
        self.pointer = pointer
        self.buffer = buffer
    }

    /// Builds a response without a body that announces `Content-Length: length`: a 304 repeating its 200's length
    /// (RFC 9110 §8.6), with no copy of that body. The header block is byte for byte what a response over a body of
    /// `length` bytes sends; libmicrohttpd sends no body with a 304 or to HEAD, and a status that would need one
    /// closes the connection instead of sending any. The corresponding C functions are
    /// `MHD_create_response_from_callback` (a reader that is never called) and `MHD_add_response_header`.
    /// - Throws: ``MicroHTTPDError/responseCreationFailed`` when libmicrohttpd cannot allocate it.
    public init(status: Int, headers: [HTTPHeader], announcingLength length: Int) throws(MicroHTTPDError) {
        guard let pointer = makeBodilessResponse(headers: headers, announcing: length) else { throw .responseCreationFailed }
        self.status = status
        self.headers = headers
        self.announcedLength = length
        self.pointer = pointer
        self.buffer = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// A response with other header fields over `shared`'s body, without copying it (a version's immutable
    /// headers, a signature added): `shared` is kept alive until libmicrohttpd drops this response's last reference,
    /// so requests still sending it never outlive the bytes. A bodiless `shared` gives a bodiless response announcing
    /// the same length. The corresponding C function is `MHD_create_response_from_buffer_with_free_callback_cls`.
    /// - Throws: ``MicroHTTPDError/responseCreationFailed`` when libmicrohttpd cannot allocate it.
    public init(status: Int, headers: [HTTPHeader], sharingBodyOf shared: PreparedResponse) throws(MicroHTTPDError) {
        self.status = status
        self.headers = headers
        self.announcedLength = shared.announcedLength
        guard let base = shared.buffer.baseAddress, !shared.buffer.isEmpty else {
            let made =
                shared.announcedLength > 0
                ? makeBodilessResponse(headers: headers, announcing: shared.announcedLength)
                : makeResponseKeepingBuffer(headers: headers, body: [])?.response
            guard let pointer = made else { throw .responseCreationFailed }
            self.pointer = pointer
            self.buffer = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        let keeper = Unmanaged.passRetained(shared)
        guard
            let pointer = MHD_create_response_from_buffer_with_free_callback_cls(
                shared.buffer.count, UnsafeMutableRawPointer(mutating: base),
                { keeper in keeper.map { Unmanaged<PreparedResponse>.fromOpaque($0).release() } }, keeper.toOpaque())
        else {
            keeper.release()
            throw .responseCreationFailed
        }
        addHeaders(headers, to: pointer)
        self.pointer = pointer
        self.buffer = shared.buffer
    }

    /// A copy of the body (for in-process tests and tools; the server sends from libmicrohttpd's buffer). Empty for
    /// a bodiless response.
    public var body: [UInt8] { Array(buffer) }

    /// The body's length in bytes (without copying it).
    var bodyCount: Int { buffer.count }

    deinit {
        // Drops our reference only; requests still sending it hold theirs (see the type's Safety note).
        MHD_destroy_response(pointer)
    }
}

/// A libmicrohttpd response owning a malloc'd copy of `body`, which libmicrohttpd frees with the response. A
/// response with an empty body and an ``HTTPResponse/announcedLength`` is made without a buffer.
func makeResponse(_ response: HTTPResponse) -> OpaquePointer? {
    if response.body.isEmpty, let length = response.announcedLength, length > 0 {
        return makeBodilessResponse(headers: response.headers, announcing: length)
    }
    return makeResponseKeepingBuffer(headers: response.headers, body: response.body)?.response
}

/// ``makeResponse(_:)``, also giving the body buffer (valid while a reference to the response is held).
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
    addHeaders(headers, to: response)
    return (response, UnsafeRawBufferPointer(start: buffer, count: body.count))
}

/// A response with no body buffer announcing `length` bytes (see ``PreparedResponse/init(status:headers:announcingLength:)``).
private func makeBodilessResponse(headers: [HTTPHeader], announcing length: Int) -> OpaquePointer? {
    guard let response = cmhd_create_bodiless_response(UInt64(max(length, 0))) else { return nil }
    addHeaders(headers, to: response)
    return response
}

/// Adds `headers` in order. The corresponding C function is `MHD_add_response_header`.
private func addHeaders(_ headers: [HTTPHeader], to response: OpaquePointer) {
    for header in headers {
        _ = MHD_add_response_header(response, header.name, header.value)
    }
}
