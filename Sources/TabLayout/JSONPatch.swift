/// JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7396) on a source's value tree.
///
/// A patch is bounded by what it builds: after every operation the document must still fit
/// ``LayoutLimits/sourceBytes`` (as compact JSON), so a short patch of `copy` operations that double the
/// document fails at the operation that crosses the limit instead of allocating gigabytes; and the work of
/// one patch (members searched, values measured and compared) is bounded by ``workLimit``.
public enum JSONPatch {
    /// Units of work one patch may do: values visited while measuring or comparing, members searched on a path.
    public static let workLimit = 16 * LayoutLimits.sourceBytes

    /// Applies a JSON Patch document (an array of operations).
    /// - Throws: ``LayoutError`` naming the operation (`/2/path`) that could not be applied; `.tooLarge` when an
    ///   operation would make the document larger than ``LayoutLimits/sourceBytes`` or the patch needs more than
    ///   ``workLimit`` units of work.
    public static func apply(_ patch: SourceNode, to document: SourceNode) throws(LayoutError) -> SourceNode {
        guard case .array(let operations) = patch.value else {
            throw LayoutError(pointer: "", line: patch.line, "a JSON Patch is an array of operations")
        }
        var budget = Budget()
        var result = document
        // An upper bound of the document's compact JSON size: adding raises it, removing leaves it; when it passes
        // the limit the document is measured again (and refused if it really is over).
        var sizeBound = try budget.size(of: document)
        for (i, operation) in operations.enumerated() {
            let at = "/\(i)"
            budget.at = at
            func field(_ name: String) throws(LayoutError) -> String {
                guard case .string(let text) = operation[name]?.value else {
                    throw LayoutError(pointer: at + "/" + name, line: operation.line, "the operation needs '\(name)', a string")
                }
                return text
            }
            let op = try field("op")
            guard let path = JSONPointer.tokens(try field("path")) else {
                throw LayoutError(pointer: at + "/path", line: operation.line, "not a JSON Pointer")
            }
            func value() throws(LayoutError) -> SourceNode {
                guard let value = operation["value"] else {
                    throw LayoutError(pointer: at + "/value", line: operation.line, "'\(op)' needs a value")
                }
                return value
            }
            func from() throws(LayoutError) -> [String] {
                guard let tokens = JSONPointer.tokens(try field("from")) else {
                    throw LayoutError(pointer: at + "/from", line: operation.line, "not a JSON Pointer")
                }
                return tokens
            }
            let failure = { (message: String) in LayoutError(pointer: at, line: operation.line, message) }
            var added: SourceNode?
            switch op {
            case "add":
                added = try value()
                result = try edit(result, path[...], .add(added!), failure, &budget)
            case "remove": result = try edit(result, path[...], .remove, failure, &budget)
            case "replace":
                added = try value()
                result = try edit(result, path[...], .replace(added!), failure, &budget)
            case "move":
                let source = try from()
                // RFC 6902 §4.4: a value cannot move into one of its own children.
                if source.count < path.count, Array(path.prefix(source.count)) == source { throw failure("'from' is a parent of 'path'") }
                guard let moved = try get(result, source[...], &budget) else { throw failure("'from' names nothing") }
                result = try edit(edit(result, source[...], .remove, failure, &budget), path[...], .add(moved), failure, &budget)
            case "copy":
                guard let copied = try get(result, try from()[...], &budget) else { throw failure("'from' names nothing") }
                added = copied
                result = try edit(result, path[...], .add(copied), failure, &budget)
            case "test":
                guard let found = try get(result, path[...], &budget), try sameValue(found, try value(), &budget) else {
                    throw failure("test failed")
                }
            default:
                throw LayoutError(pointer: at + "/op", line: operation.line, "'\(op)' is not add, remove, replace, move, copy or test")
            }
            if let added {
                sizeBound += try budget.size(of: added)
                if sizeBound > LayoutLimits.sourceBytes { sizeBound = try budget.size(of: result) }
            }
        }
        return result
    }

    /// The work done so far by one patch, and the measure of what it builds.
    private struct Budget {
        var work = 0
        /// The pointer of the operation being applied (`/3`).
        var at = ""

        mutating func charge(_ units: Int) throws(LayoutError) {
            work += units
            guard work <= JSONPatch.workLimit else {
                throw LayoutError(
                    pointer: at, line: nil,
                    "the patch needs more than \(JSONPatch.workLimit) units of work (values measured, compared or searched); split it",
                    kind: .tooLarge)
            }
        }

        /// The compact JSON size of `node` (a lower bound: escapes are not counted), measured only up to the limit.
        /// - Throws: `.tooLarge` past ``LayoutLimits/sourceBytes``.
        mutating func size(of node: SourceNode) throws(LayoutError) -> Int {
            var total = 0
            try add(node, to: &total)
            return total
        }

        private mutating func add(_ node: SourceNode, to total: inout Int) throws(LayoutError) {
            try charge(1)
            switch node.value {
            case .string(let text), .date(let text): total += text.utf8.count + 2
            case .integer, .real: total += 1
            case .bool(let flag): total += flag ? 4 : 5
            case .null: total += 4
            case .data(let bytes): total += (bytes.count + 2) / 3 * 4 + 2
            case .array(let elements):
                total += 1 + max(elements.count, 1)
                for element in elements { try add(element, to: &total) }
            case .dictionary(let members):
                total += 1 + max(members.count, 1)
                for member in members {
                    total += member.key.utf8.count + 3
                    try add(member.node, to: &total)
                }
            }
            guard total <= LayoutLimits.sourceBytes else {
                throw LayoutError(
                    pointer: at, line: nil,
                    "the operation makes the document larger than \(LayoutLimits.sourceBytes) bytes, the limit of a source",
                    kind: .tooLarge)
            }
        }
    }

    /// Applies a JSON Merge Patch: objects merge recursively, null deletes, anything else replaces.
    public static func mergePatch(_ target: SourceNode, _ patch: SourceNode) -> SourceNode {
        guard case .dictionary(let changes) = patch.value else { return patch }
        var members: [SourceNode.Member]
        if case .dictionary(let existing) = target.value { members = existing } else { members = [] }
        // Where each key is (the first of a repeated one): one lookup per change, not a search.
        var position: [String: Int] = [:]
        position.reserveCapacity(members.count + changes.count)
        for (i, member) in members.enumerated() where position[member.key] == nil { position[member.key] = i }
        var removed = [Bool](repeating: false, count: members.count)
        for change in changes {
            let index = position[change.key].flatMap { removed[$0] ? nil : $0 }
            if case .null = change.node.value {
                if let index { removed[index] = true }
            } else if let index {
                members[index].node = mergePatch(members[index].node, change.node)
            } else {
                position[change.key] = members.count
                members.append(.init(key: change.key, node: mergePatch(SourceNode(.null), change.node)))
                removed.append(false)
            }
        }
        if removed.contains(true) {
            members = members.indices.compactMap { removed[$0] ? nil : members[$0] }
        }
        return SourceNode(.dictionary(members), line: target.line)
    }

    private enum Edit {
        case add(SourceNode)
        case remove
        case replace(SourceNode)
    }

    /// RFC 6901 §4: an array index is `0` or digits without a leading zero (no sign, no `01`).
    static func arrayIndex(_ token: String) -> Int? {
        let digits = token.utf8
        guard let first = digits.first, digits.count <= 18, digits.allSatisfy(isDigit), first != UInt8(ascii: "0") || digits.count == 1
        else { return nil }
        return Int(token)
    }

    private static func get(
        _ node: SourceNode, _ path: ArraySlice<String>, _ budget: inout Budget
    ) throws(LayoutError) -> SourceNode? {
        guard let token = path.first else { return node }
        switch node.value {
        case .dictionary(let members):
            try budget.charge(members.count)
            guard let member = members.first(where: { $0.key == token }) else { return nil }
            return try get(member.node, path.dropFirst(), &budget)
        case .array(let elements):
            guard let index = arrayIndex(token), elements.indices.contains(index) else { return nil }
            return try get(elements[index], path.dropFirst(), &budget)
        default: return nil
        }
    }

    private static func edit(
        _ node: SourceNode, _ path: ArraySlice<String>, _ edit: Edit, _ failure: (String) -> LayoutError, _ budget: inout Budget
    ) throws(LayoutError) -> SourceNode {
        guard let token = path.first else {
            switch edit {
            case .add(let value), .replace(let value): return value
            case .remove: throw failure("cannot remove the whole document")
            }
        }
        var result = node
        switch node.value {
        case .dictionary(var members):
            // Searching and then copying the members (the tree is a value) cost one unit each.
            try budget.charge(members.count)
            let index = members.firstIndex { $0.key == token }
            if path.count == 1 {
                switch edit {
                case .add(let value):
                    if let index { members[index].node = value } else { members.append(.init(key: token, node: value)) }
                case .replace(let value):
                    guard let index else { throw failure("no member '\(token)' to replace") }
                    members[index].node = value
                case .remove:
                    guard let index else { throw failure("no member '\(token)' to remove") }
                    members.remove(at: index)
                }
            } else {
                guard let index else { throw failure("no member '\(token)'") }
                members[index].node = try self.edit(members[index].node, path.dropFirst(), edit, failure, &budget)
            }
            result.value = .dictionary(members)
        case .array(var elements):
            try budget.charge(elements.count)
            if path.count == 1 {
                switch edit {
                case .add(let value):
                    if token == "-" {
                        elements.append(value)
                    } else {
                        guard let index = arrayIndex(token), (0...elements.count).contains(index) else {
                            throw failure("index '\(token)' out of range")
                        }
                        elements.insert(value, at: index)
                    }
                case .replace(let value):
                    guard let index = arrayIndex(token), elements.indices.contains(index) else {
                        throw failure("index '\(token)' out of range")
                    }
                    elements[index] = value
                case .remove:
                    guard let index = arrayIndex(token), elements.indices.contains(index) else {
                        throw failure("index '\(token)' out of range")
                    }
                    elements.remove(at: index)
                }
            } else {
                guard let index = arrayIndex(token), elements.indices.contains(index) else {
                    throw failure("index '\(token)' out of range")
                }
                elements[index] = try self.edit(elements[index], path.dropFirst(), edit, failure, &budget)
            }
            result.value = .array(elements)
        default:
            throw failure("'\(token)' goes into \(node.kindName)")
        }
        return result
    }

    /// JSON equality (RFC 6902 §4.6): members in any order, numbers by value; linear in the values' size.
    private static func sameValue(_ a: SourceNode, _ b: SourceNode, _ budget: inout Budget) throws(LayoutError) -> Bool {
        try budget.charge(1)
        switch (a.value, b.value) {
        case (.array(let x), .array(let y)):
            guard x.count == y.count else { return false }
            for (p, q) in zip(x, y) where !(try sameValue(p, q, &budget)) { return false }
            return true
        case (.dictionary(let x), .dictionary(let y)):
            guard x.count == y.count else { return false }
            var other: [String: SourceNode] = [:]
            other.reserveCapacity(y.count)
            for member in y { other[member.key] = member.node }
            guard other.count == y.count else { return false }
            for member in x {
                guard let node = other[member.key], try sameValue(member.node, node, &budget) else { return false }
            }
            return true
        case (.integer(let x), .real(let y)): return Double(x) == y
        case (.real(let x), .integer(let y)): return x == Double(y)
        case (.array, _), (.dictionary, _), (_, .array), (_, .dictionary): return false
        default:
            var a = a, b = b
            a.line = nil
            b.line = nil
            return a == b
        }
    }
}

extension SourceNode {
    /// The tree as indented JSON, keys in source order (dates as text, data as base64).
    public func jsonText() -> String {
        var out: [UInt8] = []
        write(indent: 0, into: &out)
        out.append(0x0A)
        return String(decoding: out, as: UTF8.self)
    }

    private func write(indent: Int, into out: inout [UInt8]) {
        let pad = { (n: Int, out: inout [UInt8]) in out.append(contentsOf: repeatElement(0x20, count: n * 2)) }
        switch value {
        case .string(let s): CanonicalJSON.writeString(s, into: &out)
        case .integer(let n): out.append(contentsOf: String(n).utf8)
        case .real(let x): out.append(contentsOf: CanonicalJSON.formatReal(x).utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .date(let d): CanonicalJSON.writeString(d, into: &out)
        case .data(let bytes): CanonicalJSON.writeString(Base64.encode(bytes), into: &out)
        case .array(let elements):
            guard !elements.isEmpty else { return out.append(contentsOf: "[]".utf8) }
            out.append(contentsOf: "[\n".utf8)
            for (i, element) in elements.enumerated() {
                pad(indent + 1, &out)
                element.write(indent: indent + 1, into: &out)
                out.append(contentsOf: (i + 1 < elements.count ? ",\n" : "\n").utf8)
            }
            pad(indent, &out)
            out.append(UInt8(ascii: "]"))
        case .dictionary(let members):
            guard !members.isEmpty else { return out.append(contentsOf: "{}".utf8) }
            out.append(contentsOf: "{\n".utf8)
            for (i, member) in members.enumerated() {
                pad(indent + 1, &out)
                CanonicalJSON.writeString(member.key, into: &out)
                out.append(contentsOf: ": ".utf8)
                member.node.write(indent: indent + 1, into: &out)
                out.append(contentsOf: (i + 1 < members.count ? ",\n" : "\n").utf8)
            }
            pad(indent, &out)
            out.append(UInt8(ascii: "}"))
        }
    }
}
