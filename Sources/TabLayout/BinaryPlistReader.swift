/// Reads a binary property list (`bplist00`) into a ``SourceNode`` tree. Every offset and count is
/// checked against the data; an object that contains itself, nesting deeper than the limit, or more
/// decoded objects than ``LayoutLimits/binaryPlistObjects`` is an error, never a hang or a crash.
public struct BinaryPlistReader {
    private let bytes: [UInt8]
    private let offsetSize: Int
    private let referenceSize: Int
    private let objectCount: Int
    private let offsetTable: Int
    private let maxDepth: Int
    private var visiting: Set<Int> = []
    private var decoded = 0

    /// Whether `bytes` starts with the binary property list magic.
    public static func isBinaryPlist(_ bytes: [UInt8]) -> Bool { bytes.starts(with: Array("bplist00".utf8)) }

    /// - Throws: ``LayoutError`` with the pointer of the object that could not be read.
    public static func read(_ bytes: [UInt8], maxDepth: Int = LayoutLimits.depth) throws(LayoutError) -> SourceNode {
        guard isBinaryPlist(bytes), bytes.count >= 8 + 32 else {
            throw LayoutError(pointer: "", line: nil, "binary plist: too short or no bplist00 header")
        }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        let count = bigEndian(bytes, trailer + 8, 8)
        let top = bigEndian(bytes, trailer + 16, 8)
        let table = bigEndian(bytes, trailer + 24, 8)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize), count > 0, count <= UInt64(trailer),
            top < count, table >= 8, table <= UInt64(trailer),
            count.multipliedReportingOverflow(by: UInt64(offsetSize)).partialValue <= UInt64(trailer) - table
        else {
            throw LayoutError(pointer: "", line: nil, "binary plist: the trailer's sizes or offsets are out of range")
        }
        var reader = BinaryPlistReader(
            bytes: bytes, offsetSize: offsetSize, referenceSize: referenceSize, objectCount: Int(count),
            offsetTable: Int(table), maxDepth: maxDepth)
        return try reader.object(Int(top), pointer: "", depth: 0)
    }

    private init(bytes: [UInt8], offsetSize: Int, referenceSize: Int, objectCount: Int, offsetTable: Int, maxDepth: Int) {
        self.bytes = bytes
        self.offsetSize = offsetSize
        self.referenceSize = referenceSize
        self.objectCount = objectCount
        self.offsetTable = offsetTable
        self.maxDepth = maxDepth
    }

    private static func bigEndian(_ bytes: [UInt8], _ start: Int, _ count: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<count { value = value << 8 | UInt64(bytes[start + i]) }
        return value
    }

    private func failure(_ pointer: String, _ message: String) -> LayoutError {
        LayoutError(pointer: pointer, line: nil, "binary plist: " + message)
    }

    /// `count` bytes at `start` as a big-endian integer, when they lie before the offset table.
    private func integer(at start: Int, _ count: Int, _ pointer: String) throws(LayoutError) -> UInt64 {
        guard start >= 8, count <= 8, start <= offsetTable - count else { throw failure(pointer, "data out of range") }
        return Self.bigEndian(bytes, start, count)
    }

    private func offset(of object: Int, _ pointer: String) throws(LayoutError) -> Int {
        guard object >= 0, object < objectCount else { throw failure(pointer, "object reference \(object) out of range") }
        let value = Self.bigEndian(bytes, offsetTable + object * offsetSize, offsetSize)
        guard value >= 8, value < UInt64(offsetTable) else { throw failure(pointer, "object offset out of range") }
        return Int(value)
    }

    /// The count in a marker's low nibble, or the integer object that follows when it is 0xF.
    private func length(_ marker: UInt8, at start: Int, _ pointer: String) throws(LayoutError) -> (count: Int, next: Int) {
        let nibble = Int(marker & 0x0F)
        guard nibble == 0x0F else { return (nibble, start + 1) }
        guard start + 1 < offsetTable else { throw failure(pointer, "data out of range") }
        let intMarker = bytes[start + 1]
        guard intMarker >> 4 == 0x1, intMarker & 0x0F <= 3 else { throw failure(pointer, "malformed length") }
        let size = 1 << Int(intMarker & 0x0F)
        let value = try integer(at: start + 2, size, pointer)
        guard value <= UInt64(bytes.count) else { throw failure(pointer, "length out of range") }
        return (Int(value), start + 2 + size)
    }

    private mutating func object(_ reference: Int, pointer: String, depth: Int) throws(LayoutError) -> SourceNode {
        decoded += 1
        guard decoded <= LayoutLimits.binaryPlistObjects else {
            throw failure(pointer, "more than \(LayoutLimits.binaryPlistObjects) objects (shared references count each use)")
        }
        let start = try offset(of: reference, pointer)
        let marker = bytes[start]
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return SourceNode(.bool(false))
            case 0x09: return SourceNode(.bool(true))
            case 0x00: return SourceNode(.null)
            default: throw failure(pointer, "unknown object marker 0x\(String(marker, radix: 16))")
            }
        case 0x1:
            let size = 1 << Int(marker & 0x0F)
            guard size <= 16 else { throw failure(pointer, "integer wider than 16 bytes") }
            let raw = try integer(at: start + 1 + max(0, size - 8), min(size, 8), pointer)
            return SourceNode(.integer(size >= 8 ? Int64(bitPattern: raw) : Int64(raw)))
        case 0x2:
            let size = 1 << Int(marker & 0x0F)
            let raw = try integer(at: start + 1, size, pointer)
            let value: Double
            switch size {
            case 4: value = Double(Float(bitPattern: UInt32(raw)))
            case 8: value = Double(bitPattern: raw)
            default: throw failure(pointer, "real of \(size) bytes")
            }
            guard value.isFinite else { throw failure(pointer, "a real number that is not finite") }
            return SourceNode(.real(value))
        case 0x3:
            guard marker == 0x33 else { throw failure(pointer, "malformed date") }
            let seconds = Double(bitPattern: try integer(at: start + 1, 8, pointer))
            // ±10^11 s is about 3,000 years either side of 2001: past that a date is noise (and would not fit
            // the calendar arithmetic).
            guard seconds.isFinite, abs(seconds) < 1e11 else { throw failure(pointer, "a date out of range") }
            return SourceNode(.date(ReferenceDate.iso8601(secondsSince2001: seconds)))
        case 0x4:
            let (count, body) = try length(marker, at: start, pointer)
            guard body <= offsetTable - count else { throw failure(pointer, "data out of range") }
            return SourceNode(.data(Array(bytes[body..<body + count])))
        case 0x5:
            let (count, body) = try length(marker, at: start, pointer)
            guard body <= offsetTable - count else { throw failure(pointer, "string out of range") }
            guard let text = String(validating: bytes[body..<body + count], as: UTF8.self) else {
                throw failure(pointer, "an ASCII string with bytes that are not ASCII")
            }
            return SourceNode(.string(text))
        case 0x6:
            let (count, body) = try length(marker, at: start, pointer)
            guard count <= (offsetTable - body) / 2 else { throw failure(pointer, "string out of range") }
            var units: [UInt16] = []
            units.reserveCapacity(count)
            for i in 0..<count { units.append(UInt16(bytes[body + 2 * i]) << 8 | UInt16(bytes[body + 2 * i + 1])) }
            guard let text = String(validating: units, as: UTF16.self) else {
                throw failure(pointer, "a UTF-16 string that is not valid")
            }
            return SourceNode(.string(text))
        case 0xA, 0xD:
            guard depth < maxDepth else { throw failure(pointer, "nesting deeper than \(maxDepth) levels") }
            guard !visiting.contains(reference) else { throw failure(pointer, "an object that contains itself") }
            visiting.insert(reference)
            defer { visiting.remove(reference) }
            let (count, body) = try length(marker, at: start, pointer)
            let references = marker >> 4 == 0xA ? count : count * 2
            guard references <= (offsetTable - body) / referenceSize else { throw failure(pointer, "references out of range") }
            // An 8-byte reference can exceed Int.max: clamped, it fails the range check like any bad reference.
            func ref(_ i: Int) -> Int { Int(clamping: Self.bigEndian(bytes, body + i * referenceSize, referenceSize)) }
            if marker >> 4 == 0xA {
                var elements: [SourceNode] = []
                for i in 0..<count {
                    elements.append(try object(ref(i), pointer: JSONPointer.appending(pointer, i), depth: depth + 1))
                }
                return SourceNode(.array(elements))
            }
            var members: [SourceNode.Member] = []
            for i in 0..<count {
                let keyNode = try object(ref(i), pointer: pointer, depth: depth + 1)
                guard case .string(let key) = keyNode.value else { throw failure(pointer, "a dictionary key that is not a string") }
                let memberPointer = JSONPointer.appending(pointer, key)
                if members.contains(where: { $0.key == key }) { throw failure(memberPointer, "duplicate key '\(key)'") }
                members.append(.init(key: key, node: try object(ref(count + i), pointer: memberPointer, depth: depth + 1)))
            }
            return SourceNode(.dictionary(members))
        default:
            throw failure(pointer, "unsupported object marker 0x\(String(marker, radix: 16)) (UIDs and sets have no place in a layout)")
        }
    }
}

/// Property-list dates count seconds from 2001-01-01T00:00:00Z.
enum ReferenceDate {
    static func iso8601(secondsSince2001 seconds: Double) -> String {
        UTCDateTime(unixSeconds: Int64((seconds + 978_307_200).rounded(.down))).rfc3339
    }
}
