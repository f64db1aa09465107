/// JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7396) on a source's value tree.
public enum JSONPatch {
    /// Applies a JSON Patch document (an array of operations).
    /// - Throws: ``LayoutError`` naming the operation (`/2/path`) that could not be applied.
    public static func apply(_ patch: SourceNode, to document: SourceNode) throws(LayoutError) -> SourceNode {
        guard case .array(let operations) = patch.value else {
            throw LayoutError(pointer: "", line: patch.line, "a JSON Patch is an array of operations")
        }
        var result = document
        for (i, operation) in operations.enumerated() {
            let at = "/\(i)"
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
            switch op {
            case "add": result = try edit(result, path[...], .add(try value()), failure)
            case "remove": result = try edit(result, path[...], .remove, failure)
            case "replace": result = try edit(result, path[...], .replace(try value()), failure)
            case "move":
                let source = try from()
                guard let moved = get(result, source[...]) else { throw failure("'from' names nothing") }
                result = try edit(edit(result, source[...], .remove, failure), path[...], .add(moved), failure)
            case "copy":
                guard let copied = get(result, try from()[...]) else { throw failure("'from' names nothing") }
                result = try edit(result, path[...], .add(copied), failure)
            case "test":
                guard let found = get(result, path[...]), sameValue(found, try value()) else { throw failure("test failed") }
            default:
                throw LayoutError(pointer: at + "/op", line: operation.line, "'\(op)' is not add, remove, replace, move, copy or test")
            }
        }
        return result
    }

    /// Applies a JSON Merge Patch: objects merge recursively, null deletes, anything else replaces.
    public static func mergePatch(_ target: SourceNode, _ patch: SourceNode) -> SourceNode {
        guard case .dictionary(let changes) = patch.value else { return patch }
        var members: [SourceNode.Member]
        if case .dictionary(let existing) = target.value { members = existing } else { members = [] }
        for change in changes {
            let index = members.firstIndex { $0.key == change.key }
            if case .null = change.node.value {
                if let index { members.remove(at: index) }
            } else if let index {
                members[index].node = mergePatch(members[index].node, change.node)
            } else {
                members.append(.init(key: change.key, node: mergePatch(SourceNode(.null), change.node)))
            }
        }
        return SourceNode(.dictionary(members), line: target.line)
    }

    private enum Edit {
        case add(SourceNode)
        case remove
        case replace(SourceNode)
    }

    private static func get(_ node: SourceNode, _ path: ArraySlice<String>) -> SourceNode? {
        guard let token = path.first else { return node }
        switch node.value {
        case .dictionary(let members):
            return members.first { $0.key == token }.flatMap { get($0.node, path.dropFirst()) }
        case .array(let elements):
            guard let index = Int(token), elements.indices.contains(index) else { return nil }
            return get(elements[index], path.dropFirst())
        default: return nil
        }
    }

    private static func edit(
        _ node: SourceNode, _ path: ArraySlice<String>, _ edit: Edit, _ failure: (String) -> LayoutError
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
                members[index].node = try self.edit(members[index].node, path.dropFirst(), edit, failure)
            }
            result.value = .dictionary(members)
        case .array(var elements):
            if path.count == 1 {
                switch edit {
                case .add(let value):
                    if token == "-" {
                        elements.append(value)
                    } else {
                        guard let index = Int(token), (0...elements.count).contains(index) else {
                            throw failure("index '\(token)' out of range")
                        }
                        elements.insert(value, at: index)
                    }
                case .replace(let value):
                    guard let index = Int(token), elements.indices.contains(index) else { throw failure("index '\(token)' out of range") }
                    elements[index] = value
                case .remove:
                    guard let index = Int(token), elements.indices.contains(index) else { throw failure("index '\(token)' out of range") }
                    elements.remove(at: index)
                }
            } else {
                guard let index = Int(token), elements.indices.contains(index) else { throw failure("index '\(token)' out of range") }
                elements[index] = try self.edit(elements[index], path.dropFirst(), edit, failure)
            }
            result.value = .array(elements)
        default:
            throw failure("'\(token)' goes into \(node.kindName)")
        }
        return result
    }

    private static func sameValue(_ a: SourceNode, _ b: SourceNode) -> Bool {
        switch (a.value, b.value) {
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
        case (.dictionary(let x), .dictionary(let y)):
            return x.count == y.count && x.allSatisfy { member in y.contains { $0.key == member.key && sameValue($0.node, member.node) } }
        case (.integer(let x), .real(let y)): return Double(x) == y
        case (.real(let x), .integer(let y)): return x == Double(y)
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
