/// The bytes that tell one request from another, for a handler that remembers its answers (the read memo).
extension HTTPRequest {
    /// Calls `body` with the request's identity: its method, decoded path, query as sent and every field line (name
    /// and value, in the order received), each length-prefixed, so that two requests have equal identities exactly
    /// when a handler reading them through this type sees the same method, path, query and fields. Not in it: the
    /// body (GET and HEAD only), the client's address and the connection.
    ///
    /// `body` gets nil for a request that has no identity: one made of values, a method other than GET or HEAD, a
    /// body, more field lines than the request's field index holds, or an identity longer than `maxBytes`. The bytes
    /// are on the stack, valid during `body` only. Inlined so that the caller's `R` is concrete (see
    /// ``withHeader(_:_:)``).
    @inlinable
    public func withIdentity<R>(maxBytes: Int, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        var result: R?
        visitIdentity(maxBytes: maxBytes) { result = body($0) }
        // `visitIdentity` calls its closure exactly once.
        return result.unsafelyUnwrapped
    }

    /// ``withIdentity(maxBytes:_:)`` without a generic result: calls `body` exactly once.
    @usableFromInline
    func visitIdentity(maxBytes: Int, _ body: (UnsafeRawBufferPointer?) -> Void) {
        let methodTag: UInt8
        switch method {
        case .get: methodTag = 1
        case .head: methodTag = 2
        default: return body(nil)
        }
        guard self.body.isEmpty, case .daemon(let connection, _, _) = source, let fieldIndex, fieldIndex.pointee.isReady(connection),
            let query = rawQuery
        else { return body(nil) }
        let path = pathBytes
        withUnsafeTemporaryAllocation(byteCount: maxBytes, alignment: 8) { buffer in
            var writer = IdentityWriter(buffer: buffer)
            writer.append(methodTag)
            writer.append(path)
            writer.append(query.bytes)
            fieldIndex.pointee.forEachLine { line in
                writer.append(line.name)
                // A line without a value and one with an empty value read differently (`firstValue(named:)`).
                if line.value.baseAddress == nil { writer.appendAbsent() } else { writer.append(line.value) }
            }
            body(writer.overflowed ? nil : UnsafeRawBufferPointer(rebasing: buffer[..<writer.count]))
        }
    }
}

/// Writes length-prefixed byte strings into a fixed buffer, noting when they do not fit.
private struct IdentityWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var count = 0
    var overflowed = false

    mutating func append(_ byte: UInt8) {
        guard count < buffer.count else {
            overflowed = true
            return
        }
        buffer[count] = byte
        count += 1
    }

    /// Four bytes of length (a field line may be as long as the header block), then the bytes.
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard !overflowed, count + 4 + bytes.count <= buffer.count else {
            overflowed = true
            return
        }
        buffer.storeBytes(of: UInt32(bytes.count).littleEndian, toByteOffset: count, as: UInt32.self)
        count += 4
        if let base = bytes.baseAddress, !bytes.isEmpty {
            (buffer.baseAddress! + count).copyMemory(from: base, byteCount: bytes.count)
        }
        count += bytes.count
    }

    /// A length no byte string has: a value that is absent.
    mutating func appendAbsent() {
        guard !overflowed, count + 4 <= buffer.count else {
            overflowed = true
            return
        }
        buffer.storeBytes(of: UInt32.max, toByteOffset: count, as: UInt32.self)
        count += 4
    }
}
