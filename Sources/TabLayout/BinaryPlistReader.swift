import TabTime

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
        return try reader.object(Int(top), depth: 0)
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

    /// An error at the current object; each enclosing dictionary member and array element prefixes its token to
    /// the pointer as the error passes through it (a pointer per object would cost, with one long key shared by
    /// every level, the key's length times the depth squared).
    private func failure(_ message: String) -> LayoutError {
        LayoutError(pointer: "", line: nil, "binary plist: " + message)
    }

    /// `count` bytes at `start` as a big-endian integer, when they lie before the offset table.
    private func integer(at start: Int, _ count: Int) throws(LayoutError) -> UInt64 {
        guard start >= 8, count <= 8, start <= offsetTable - count else { throw failure("data out of range") }
        return Self.bigEndian(bytes, start, count)
    }

    private func offset(of object: Int) throws(LayoutError) -> Int {
        guard object >= 0, object < objectCount else { throw failure("object reference \(object) out of range") }
        let value = Self.bigEndian(bytes, offsetTable + object * offsetSize, offsetSize)
        guard value >= 8, value < UInt64(offsetTable) else { throw failure("object offset out of range") }
        return Int(value)
    }

    /// The count in a marker's low nibble, or the integer object that follows when it is 0xF.
    private func length(_ marker: UInt8, at start: Int) throws(LayoutError) -> (count: Int, next: Int) {
        let nibble = Int(marker & 0x0F)
        guard nibble == 0x0F else { return (nibble, start + 1) }
        guard start + 1 < offsetTable else { throw failure("data out of range") }
        let intMarker = bytes[start + 1]
        guard intMarker >> 4 == 0x1, intMarker & 0x0F <= 3 else { throw failure("malformed length") }
        let size = 1 << Int(intMarker & 0x0F)
        let value = try integer(at: start + 2, size)
        guard value <= UInt64(bytes.count) else { throw failure("length out of range") }
        return (Int(value), start + 2 + size)
    }

    private mutating func object(_ reference: Int, depth: Int) throws(LayoutError) -> SourceNode {
        decoded += 1
        guard decoded <= LayoutLimits.binaryPlistObjects else {
            throw failure("more than \(LayoutLimits.binaryPlistObjects) objects (shared references count each use)")
        }
        let start = try offset(of: reference)
        let marker = bytes[start]
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return SourceNode(.bool(false))
            case 0x09: return SourceNode(.bool(true))
            case 0x00: return SourceNode(.null)
            default: throw failure("unknown object marker 0x\(String(marker, radix: 16))")
            }
        case 0x1:
            let size = 1 << Int(marker & 0x0F)
            switch size {
            case 1, 2, 4:
                // Unsigned, as every writer uses them.
                return SourceNode(.integer(Int64(try integer(at: start + 1, size))))
            case 8:
                return SourceNode(.integer(Int64(bitPattern: try integer(at: start + 1, 8))))
            case 16:
                // A signed 128-bit integer (how writers store 2^63…2^64−1): kept when it fits 64 bits, never cut.
                let high = try integer(at: start + 1, 8)
                let low = try integer(at: start + 9, 8)
                let value = Int64(bitPattern: low)
                guard high == (value < 0 ? UInt64.max : 0) else {
                    throw failure("the integer \(high == 0 ? String(low) : "of 128 bits") " + IntegerRange.message)
                }
                return SourceNode(.integer(value))
            default: throw failure("integer of \(size) bytes")
            }
        case 0x2:
            let size = 1 << Int(marker & 0x0F)
            let raw = try integer(at: start + 1, size)
            let value: Double
            switch size {
            case 4: value = Double(Float(bitPattern: UInt32(raw)))
            case 8: value = Double(bitPattern: raw)
            default: throw failure("real of \(size) bytes")
            }
            guard value.isFinite else { throw failure("a real number that is not finite") }
            return SourceNode(.real(value))
        case 0x3:
            guard marker == 0x33 else { throw failure("malformed date") }
            let seconds = Double(bitPattern: try integer(at: start + 1, 8))
            guard let date = ReferenceDate.iso8601(secondsSince2001: seconds) else {
                throw failure("a date outside the years 0001…9999")
            }
            return SourceNode(.date(date))
        case 0x4:
            let (count, body) = try length(marker, at: start)
            guard body <= offsetTable - count else { throw failure("data out of range") }
            return SourceNode(.data(Array(bytes[body..<body + count])))
        case 0x5:
            let (count, body) = try length(marker, at: start)
            guard body <= offsetTable - count else { throw failure("string out of range") }
            guard let text = String(validating: bytes[body..<body + count], as: UTF8.self) else {
                throw failure("an ASCII string with bytes that are not ASCII")
            }
            return SourceNode(.string(text))
        case 0x6:
            let (count, body) = try length(marker, at: start)
            guard count <= (offsetTable - body) / 2 else { throw failure("string out of range") }
            var units: [UInt16] = []
            units.reserveCapacity(count)
            for i in 0..<count { units.append(UInt16(bytes[body + 2 * i]) << 8 | UInt16(bytes[body + 2 * i + 1])) }
            guard let text = String(validating: units, as: UTF16.self) else {
                throw failure("a UTF-16 string that is not valid")
            }
            return SourceNode(.string(text))
        case 0xA, 0xD:
            guard depth < maxDepth else { throw failure("nesting deeper than \(maxDepth) levels") }
            guard !visiting.contains(reference) else { throw failure("an object that contains itself") }
            visiting.insert(reference)
            defer { visiting.remove(reference) }
            let (count, body) = try length(marker, at: start)
            let references = marker >> 4 == 0xA ? count : count * 2
            guard references <= (offsetTable - body) / referenceSize else { throw failure("references out of range") }
            // An 8-byte reference can exceed Int.max: clamped, it fails the range check like any bad reference.
            func ref(_ i: Int) -> Int { Int(clamping: Self.bigEndian(bytes, body + i * referenceSize, referenceSize)) }
            if marker >> 4 == 0xA {
                var elements: [SourceNode] = []
                elements.reserveCapacity(count)
                for i in 0..<count {
                    do throws(LayoutError) {
                        elements.append(try object(ref(i), depth: depth + 1))
                    } catch {
                        throw error.within(i)
                    }
                }
                return SourceNode(.array(elements))
            }
            var members: [SourceNode.Member] = []
            members.reserveCapacity(count)
            var keys = KeySet()
            for i in 0..<count {
                let keyNode = try object(ref(i), depth: depth + 1)
                guard case .string(let key) = keyNode.value else { throw failure("a dictionary key that is not a string") }
                do throws(LayoutError) {
                    guard keys.insert(key, into: members) else { throw failure("duplicate key '\(key)'") }
                    members.append(.init(key: key, node: try object(ref(count + i), depth: depth + 1)))
                } catch {
                    throw error.within(key)
                }
            }
            return SourceNode(.dictionary(members))
        default:
            throw failure("unsupported object marker 0x\(String(marker, radix: 16)) (UIDs and sets have no place in a layout)")
        }
    }
}

/// Property-list dates count seconds from 2001-01-01T00:00:00Z (a binary plist stores them as a double).
enum ReferenceDate {
    /// Seconds from 2001 to 0001-01-01T00:00:00Z and to 10000-01-01T00:00:00Z: the years RFC 3339 can write.
    static let range = -63_113_904_000.0..<252_423_993_600.0

    /// RFC 3339 text of the date, with its fraction of a second to the microsecond when it has one
    /// (`2024-02-29T12:00:00.25Z`); nil outside the years 0001…9999 or for a value that is not finite.
    static func iso8601(secondsSince2001 seconds: Double) -> String? {
        guard seconds.isFinite, range.contains(seconds) else { return nil }
        // Whole microseconds, so that a fraction that rounds up carries into the second.
        let micros = Int64((seconds * 1_000_000).rounded())
        let (whole, fraction) = micros.quotientAndRemainder(dividingBy: 1_000_000)
        let unixSeconds = (fraction < 0 ? whole - 1 : whole) + 978_307_200
        let positiveFraction = fraction < 0 ? fraction + 1_000_000 : fraction
        let text = Timestamp(unixSeconds: unixSeconds).rfc3339Seconds
        guard positiveFraction != 0 else { return text }
        var digits = String(positiveFraction)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return text.dropLast() + "." + digits + "Z"
    }
}
