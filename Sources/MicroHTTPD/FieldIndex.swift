internal import CMicroHTTPD

/// The request's field lines, read from libmicrohttpd in one walk on first use and looked up in place afterwards.
///
/// The read path asks for a dozen fields per request (`Accept`, `Accept-Encoding` three times, `If-None-Match`, …);
/// each lookup used to walk libmicrohttpd's list of fields, calling back into Swift per field: 13 walks per 304,
/// about 5% of the server's samples. The entries point into libmicrohttpd's memory for the request, so
/// an index lives on the access handler's stack for exactly the handler's call (``with(_:)``).
struct FieldIndex {
    /// A field line as libmicrohttpd holds it: name and value bytes (the value's start is nil when it has none).
    struct Entry {
        var name: UnsafeBufferPointer<UInt8>
        var value: UnsafeBufferPointer<UInt8>
    }

    /// Lines held in the index; a request with more is looked up in libmicrohttpd's list as before.
    static let capacity = 32

    private let entries: UnsafeMutableBufferPointer<Entry>
    /// Lines recorded; -1 before the walk, more than ``capacity`` when they did not all fit.
    private var count = -1

    /// Calls `body` with an empty index, valid during the call only.
    static func with<R>(_ body: (UnsafeMutablePointer<FieldIndex>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: Entry.self, capacity: capacity) { entries in
            var index = FieldIndex(entries: entries)
            return withUnsafeMutablePointer(to: &index) { body($0) }
        }
    }

    /// Whether the index holds every line of `connection`'s request (walking libmicrohttpd's list the first time).
    /// The corresponding C function is `MHD_get_connection_values_n`.
    mutating func isReady(_ connection: OpaquePointer) -> Bool {
        if count < 0 {
            count = 0
            withUnsafeMutablePointer(to: &self) { pointer in
                _ = MHD_get_connection_values_n(connection, MHD_ValueKind.HEADER_KIND, Self.record, pointer)
            }
        }
        return count <= Self.capacity
    }

    /// Calls `visit` with the value of each line named `name` (ASCII case-insensitively), in the order received.
    func forEachValue(named name: UnsafeBufferPointer<UInt8>, _ visit: (UnsafeBufferPointer<UInt8>) -> Void) {
        for entry in entries[..<count] where entry.name.count == name.count && sameIgnoringCase(entry.name, name) {
            visit(entry.value)
        }
    }

    /// Calls `visit` with every line, in the order received (after ``isReady(_:)`` returned true).
    func forEachLine(_ visit: (Entry) -> Void) {
        for entry in entries[..<count] { visit(entry) }
    }

    /// The first line named `name`, as `MHD_lookup_connection_value` gives it: nil when absent or without a value.
    func firstValue(named name: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        for entry in entries[..<count] where entry.name.count == name.count && sameIgnoringCase(entry.name, name) {
            return entry.value.baseAddress == nil ? nil : entry.value
        }
        return nil
    }

    private static let record: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
        guard let cls, let key else { return MHD_Result.YES }
        let index = cls.assumingMemoryBound(to: FieldIndex.self)
        guard index.pointee.count < capacity else {
            index.pointee.count = capacity + 1
            return MHD_Result.NO  // too many to hold: lookups walk libmicrohttpd's list instead
        }
        let valueStart = value.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }
        index.pointee.entries[index.pointee.count] = Entry(
            name: UnsafeBufferPointer(start: UnsafeRawPointer(key).assumingMemoryBound(to: UInt8.self), count: keySize),
            value: UnsafeBufferPointer(start: valueStart, count: value == nil ? 0 : valueSize))
        index.pointee.count += 1
        return MHD_Result.YES
    }
}

/// Counts (first pass) or joins (second pass, when `output` is set) the field lines of one name.
struct FieldLineCollector {
    let name: UnsafeBufferPointer<UInt8>
    var lines = 0
    var totalBytes = 0
    var first: UnsafeBufferPointer<UInt8>?
    var output: UnsafeMutableBufferPointer<UInt8>?
    var written = 0
    var joined = 0

    init(name: UnsafeBufferPointer<UInt8>) { self.name = name }

    /// One line of the field, already trimmed.
    mutating func add(_ line: UnsafeBufferPointer<UInt8>) {
        if let output {
            var offset = written
            if joined > 0 {
                output[offset] = UInt8(ascii: ",")
                output[offset + 1] = UInt8(ascii: " ")
                offset += 2
            }
            if let base = line.baseAddress, let destination = output.baseAddress {
                (destination + offset).update(from: base, count: line.count)
            }
            written = offset + line.count
            joined += 1
        } else {
            if lines == 0 { first = line }
            lines += 1
            totalBytes += line.count
        }
    }

    /// `MHD_KeyValueIteratorN` over libmicrohttpd's list: adds the lines named `name`.
    static let visit: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
        guard let cls, let key else { return MHD_Result.YES }
        let collector = cls.assumingMemoryBound(to: FieldLineCollector.self)
        let fieldName = UnsafeBufferPointer(start: UnsafeRawPointer(key).assumingMemoryBound(to: UInt8.self), count: keySize)
        guard fieldName.count == collector.pointee.name.count, sameIgnoringCase(fieldName, collector.pointee.name) else {
            return MHD_Result.YES
        }
        let valueStart = value.map { UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self) }
        collector.pointee.add(trimmed(UnsafeBufferPointer(start: valueStart, count: value == nil ? 0 : valueSize)))
        return MHD_Result.YES
    }
}

/// ASCII case-insensitive equality of two byte strings of the same length.
private func sameIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    for index in 0..<a.count {
        let x = a[index] | (a[index] &- 0x41 < 26 ? 0x20 : 0)
        let y = b[index] | (b[index] &- 0x41 < 26 ? 0x20 : 0)
        if x != y { return false }
    }
    return true
}
