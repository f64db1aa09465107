import Testing

@testable import TabLayout

/// Work and output bounded by the input: readers linear in keys, JSON Patch bounded by what it builds, error
/// reports bounded whatever the source. No test here reads a clock: the work is counted, or the outcome checked
/// on the largest inputs the limits allow (Benchmarks/ times them).
@Suite struct BoundsTests {
    // MARK: Linear duplicate-key checks

    /// The duplicate-key check of every reader (one ``KeySet`` per dictionary): doubling the keys at most doubles
    /// the work (plus the move into the hash set), where comparing each key with every earlier one quadrupled it.
    @Test func keySetWorkGrowsLinearly() {
        func probes(_ count: Int) -> Int {
            var keys = KeySet()
            var members: [SourceNode.Member] = []
            for i in 0..<count where keys.insert("key\(i)", into: members) {
                members.append(.init(key: "key\(i)", node: SourceNode(.null)))
            }
            let repeats = [keys.insert("key0", into: members), keys.insert("key\(count - 1)", into: members)]
            #expect(members.count == count && repeats == [false, false])
            return keys.probes
        }
        for n in [1_000, 10_000, 40_000] {
            let ratio = Double(probes(2 * n)) / Double(probes(n))
            #expect(ratio <= 2.1, "\(n) → \(2 * n) keys: \(ratio)× the work")
        }
        // And no more than a small constant per key (the quadratic scan did n²/2: 50 million for 10,000 keys).
        #expect(probes(10_000) < 3 * 10_000)
    }

    /// Keys `k0` … as many as fit 1 MiB, in each format, each reader returning every key in order; a repeat of
    /// the first key at the very end is found (with its pointer) like any other.
    @Test(arguments: ["json", "xml", "binary", "strings"])
    func oneMebibyteDictionariesReadWhole(format: String) throws {
        // As many short keys as fit 1 MiB in each format.
        let count = ["json": 70_000, "xml": 36_000, "binary": 55_000, "strings": 70_000][format]!
        let keys = (0..<count).map { "k\($0)" }
        let source = Self.dictionary(keys, format: format)
        #expect(source.count <= LayoutLimits.sourceBytes)
        if format == "strings" {
            let table = try StringsTable.read(source)
            #expect(table.entries.count == count && table.entries[keys[count - 1]] == "")
            return
        }
        let node = try LayoutSource.readTree(source)
        guard case .dictionary(let members) = node.value else {
            Issue.record("not a dictionary")
            return
        }
        #expect(members.map(\.key) == keys)
        let repeated = Self.dictionary(keys + ["k0"], format: format)
        do {
            _ = try LayoutSource.readTree(repeated)
            Issue.record("a repeated key should be refused")
        } catch {
            #expect(error.diagnostics.first?.pointer == "/k0")
            #expect(error.diagnostics.first?.message.contains("duplicate key 'k0'") == true)
        }
    }

    // MARK: JSON Patch

    /// An attack of scripts/abuse: 22 `copy` operations that each double the document. The limit of a source applies after every
    /// operation, so the patch fails at the operation that crosses it.
    @Test func copiesThatDoubleTheDocumentStopAtTheSizeLimit() throws {
        let document = try JSONReader.read(Array(#"{"seed":"\#(String(repeating: "x", count: 300))"}"#.utf8))
        let operations = (0..<22).map { #"{"op":"copy","from":"","path":"/c\#($0)"}"# }
        let patch = try JSONReader.read(Array("[\(operations.joined(separator: ","))]".utf8))
        do {
            _ = try JSONPatch.apply(patch, to: document)
            Issue.record("the patch should fail")
        } catch {
            #expect(error.kind == .tooLarge)
            // 300 bytes doubled: past 1 MiB at the 12th copy (2^12 × ~300 > 2^20).
            #expect(error.diagnostics.first?.pointer == "/11", "\(error)")
            #expect(error.diagnostics.first?.message.contains("larger than 1048576 bytes") == true)
        }
        // Below the limit the same operations apply.
        let few = try JSONReader.read(Array("[\(operations.prefix(5).joined(separator: ","))]".utf8))
        #expect(try JSONPatch.apply(few, to: document)["c4"]?["c3"]?["seed"] != nil)
    }

    /// Copying (and so measuring) a large value hundreds of times, each copy overwriting the last so that the size
    /// stays under the limit: the work is bounded by ``JSONPatch/workLimit``.
    @Test func repeatedLargeCopiesHitTheWorkLimit() throws {
        let numbers = (0..<100_000).map(String.init).joined(separator: ",")
        let document = try JSONReader.read(Array(#"{"a":[\#(numbers)]}"#.utf8))
        let test = #"{"op":"test","path":"/a","value":[\#(numbers)]}"#
        let once = try JSONReader.read(Array("[\(test)]".utf8))
        #expect(try JSONPatch.apply(once, to: document)["a"] != nil)
        let many = try JSONReader.read(
            Array("[\(Array(repeating: #"{"op":"copy","from":"/a","path":"/b"}"#, count: 400).joined(separator: ","))]".utf8))
        do {
            _ = try JSONPatch.apply(many, to: document)
            Issue.record("the patch should run out of work")
        } catch {
            #expect(error.kind == .tooLarge)
            #expect(error.diagnostics.first?.message.contains("units of work") == true, "\(error)")
        }
    }

    @Test func movingAValueIntoItsOwnChildIsRefused() throws {
        let document = try JSONReader.read(Array(#"{"a":{"b":{}}}"#.utf8))
        let patch = try JSONReader.read(Array(#"[{"op":"move","from":"/a","path":"/a/b/c"}]"#.utf8))
        #expect(throws: LayoutError.self) { try JSONPatch.apply(patch, to: document) }
    }

    // MARK: Error reports

    /// An attack of scripts/abuse: one long key shared by 63 nesting levels of a binary plist (a 401 KB body gave an 807 MB
    /// error). Every diagnostic pointer is cut in the middle and the whole report stays small.
    @Test func aLongKeySharedByEveryLevelGivesASmallReport() throws {
        let key = String(repeating: "K", count: 300_000)
        let source = Self.sharedKeyPlist(key: key, levels: 63)
        #expect(source.count < 310_000)
        do {
            _ = try LayoutSource.parse(source)
            Issue.record("the source should be refused")
        } catch {
            #expect(error.diagnostics.count <= DiagnosticLimits.count)
            let bytes = error.diagnostics.reduce(0) { $0 + $1.pointer.utf8.count + $1.message.utf8.count }
            #expect(bytes <= DiagnosticLimits.totalBytes)
            #expect(error.diagnostics.allSatisfy { $0.pointer.utf8.count <= DiagnosticLimits.pointerBytes })
            #expect(error.description.utf8.count < 64 * 1024)
            // The pointers still say where: they start at the root and end at the level of the culprit.
            #expect(error.diagnostics.contains { $0.pointer.hasPrefix("/KKKK") && $0.pointer.contains("…") })
        }
    }

    @Test func diagnosticsAreCappedInCountLengthAndBytes() {
        let many = (0..<1_000).map { (i: Int) in FieldError(pointer: "/tabs/\(i)", line: i, message: "problem \(i)") }
        let error = LayoutError(many)
        #expect(error.diagnostics.count == DiagnosticLimits.count)
        #expect(error.diagnostics[98].pointer == "/tabs/98")
        #expect(error.diagnostics.last?.message.hasPrefix("… and 901 more problems") == true)
        // Capping twice changes nothing.
        #expect(LayoutError(error.diagnostics).diagnostics == error.diagnostics)

        let longPointer = "/start" + String(repeating: "/middle", count: 10_000) + "/end"
        let long = LayoutError([FieldError(pointer: longPointer, line: nil, message: String(repeating: "é", count: 10_000))])
        let only = long.diagnostics[0]
        #expect(only.pointer.hasPrefix("/start/middle") && only.pointer.hasSuffix("/middle/end") && only.pointer.contains("…"))
        #expect(only.pointer.utf8.count <= DiagnosticLimits.pointerBytes)
        #expect(only.message.hasSuffix("…") && only.message.utf8.count <= DiagnosticLimits.messageBytes)
        #expect(long.diagnostics.count == 1)

        let wide = (0..<99).map { _ in
            FieldError(pointer: "/" + String(repeating: "p", count: 400), line: nil, message: String(repeating: "m", count: 400))
        }
        let capped = LayoutError(wide).diagnostics
        #expect(capped.reduce(0) { $0 + $1.pointer.utf8.count + $1.message.utf8.count } <= DiagnosticLimits.totalBytes)
        #expect(capped.last?.message.contains("more problems") == true)
    }

    @Test func boundedPointerPathKeepsBothEnds() {
        var path = BoundedPointerPath()
        path.push("tabs")
        path.push(3)
        path.push("a/b~c")
        #expect(path.pointer == "/tabs/3/a~1b~0c")
        for _ in 0..<60 { path.push(String(repeating: "x", count: 100)) }
        path.push("leaf")
        let pointer = path.pointer
        #expect(pointer.hasPrefix("/tabs/3/a~1b~0c/xxx") && pointer.hasSuffix("x/leaf") && pointer.contains("…"))
        #expect(pointer.utf8.count <= DiagnosticLimits.pointerBytes)
    }

    // MARK: Sources

    /// `keys` mapped to empty strings (`true` in a binary plist), in `format`.
    static func dictionary(_ keys: [String], format: String) -> [UInt8] {
        switch format {
        case "json": return Array(("{" + keys.map { #""\#($0)":"""# }.joined(separator: ",") + "}").utf8)
        case "xml": return Array(("<plist><dict>" + keys.map { "<key>\($0)</key><string/>" }.joined() + "</dict></plist>").utf8)
        case "strings": return Array(keys.map { #""\#($0)"="";"# }.joined(separator: "\n").utf8)
        default:
            // Object 0: the dictionary; 1: true; 2…: the keys (ASCII strings). References 3 bytes, offsets 4.
            var bytes = Array("bplist00".utf8)
            var offsets: [Int] = []
            let referenceSize = 3
            func reference(_ i: Int) -> [UInt8] { [UInt8(i >> 16 & 0xFF), UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF)] }
            func length(_ marker: UInt8, _ count: Int) -> [UInt8] {
                count < 15
                    ? [marker | UInt8(count)]
                    : [
                        marker | 0x0F, 0x12, UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF),
                        UInt8(count & 0xFF),
                    ]
            }
            offsets.append(bytes.count)
            bytes += length(0xD0, keys.count)
            for i in keys.indices { bytes += reference(2 + i) }
            for _ in keys.indices { bytes += reference(1) }
            offsets.append(bytes.count)
            bytes.append(0x09)
            for key in keys {
                offsets.append(bytes.count)
                bytes += length(0x50, key.utf8.count) + Array(key.utf8)
            }
            return bytes + Self.trailer(offsets: offsets, referenceSize: referenceSize, tableAt: bytes.count)
        }
    }

    /// Dictionaries nested `levels` deep, each holding the next under the same key object (one string, shared).
    static func sharedKeyPlist(key: String, levels: Int) -> [UInt8] {
        // Object 0: the key; 1: true; 2…levels+1: the dictionaries, 2 the outermost. References 1 byte.
        var bytes = Array("bplist00".utf8)
        var offsets = [bytes.count]
        let count = key.utf8.count
        bytes += [0x5F, 0x12, UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
        bytes += Array(key.utf8)
        offsets.append(bytes.count)
        bytes.append(0x09)
        for level in 0..<levels {
            offsets.append(bytes.count)
            bytes += [0xD1, 0, UInt8(level == levels - 1 ? 1 : 3 + level)]
        }
        // The top object is the first dictionary (object 2).
        return bytes + trailer(offsets: offsets, referenceSize: 1, tableAt: bytes.count, top: 2)
    }

    static func trailer(offsets: [Int], referenceSize: Int, tableAt table: Int, top: Int = 0) -> [UInt8] {
        func bigEndian(_ value: Int, _ size: Int) -> [UInt8] { (0..<size).reversed().map { UInt8(value >> (8 * $0) & 0xFF) } }
        var bytes: [UInt8] = []
        for offset in offsets { bytes += bigEndian(offset, 4) }
        bytes += [0, 0, 0, 0, 0, 0, 4, UInt8(referenceSize)]
        bytes += bigEndian(offsets.count, 8) + bigEndian(top, 8) + bigEndian(table, 8)
        return bytes
    }
}
