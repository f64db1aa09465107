/// One difference between two versions of a layout's source: a tab added, removed or moved, one field of a tab
/// changed, or a layout-level key (appearance, initial tab, `maxVisibleTabs`, strings per locale, …) changed.
public struct LayoutChange: Sendable, Equatable {
    /// What happened.
    public enum Operation: String, Sendable, Equatable {
        case added, removed, moved, changed
    }

    public var operation: Operation
    /// The id of the tab concerned; nil for a layout-level key.
    public var tab: String?
    /// Where the change is: in the newer source, or in the older one for what was removed.
    public var pointer: String
    /// The old value (for `moved`: the tab's old pointer, as a string); nil for `added`.
    public var from: JSONValue?
    /// The new value (for `moved`: the tab's new pointer, as a string); nil for `removed`.
    public var to: JSONValue?

    public init(_ operation: Operation, tab: String? = nil, pointer: String, from: JSONValue? = nil, to: JSONValue? = nil) {
        self.operation = operation
        self.tab = tab
        self.pointer = pointer
        self.from = from
        self.to = to
    }

    /// `{"op", "tab"?, "pointer", "from"?, "to"?}`, as `GET …/versions/{n}/diff` lists changes.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["op": .string(operation.rawValue), "pointer": .string(pointer)]
        if let tab { object["tab"] = .string(tab) }
        if let from { object["from"] = from }
        if let to { object["to"] = to }
        return .object(object)
    }

    /// One line for `text/plain`, values as canonical JSON:
    /// `added home /tabs/0 {…}`, `removed /maxVisibleTabs 5`, `changed home /tabs/0/title "Home" -> "Start"`,
    /// `moved news /tabs/1 -> /tabs/3`. A pointer holding a control character (a strings key may) is written as a
    /// JSON string, so that the line stays one line.
    public var line: String {
        func json(_ value: JSONValue) -> String { String(decoding: CanonicalJSON.encode(value), as: UTF8.self) }
        func place(_ pointer: String) -> String {
            pointer.utf8.contains { $0 < 0x20 || $0 == 0x7F } ? json(.string(pointer)) : pointer
        }
        func text(_ value: JSONValue?) -> String {
            guard let value else { return "" }
            if operation == .moved, case .string(let pointer) = value { return place(pointer) }
            return json(value)
        }
        var line = operation.rawValue
        if let tab { line += " " + tab }
        switch operation {
        case .added: line += " \(place(pointer)) \(text(to))"
        case .removed: line += " \(place(pointer)) \(text(from))"
        case .changed: line += " \(place(pointer)) \(text(from)) -> \(text(to))"
        case .moved: line += " \(text(from)) -> \(text(to))"
        }
        return line
    }
}

/// The tab-level changes from one version of a layout's source to another.
///
/// Both sources are read as the JSON form JSON Patch works on (``LayoutSource/readTree(_:format:)``) and go through
/// the validator, so that tabs are matched by their `id` (the explicit one, or the one derived from `rootViewController`), at any
/// depth: a child that moves under another tab is the same tab. For a tab both versions have, `moved` says that its
/// parent changed or that its place among the siblings both versions share changed (inserting or removing a tab
/// before it moves nothing else); `changed` lists each field that differs (seed 000's `TabBarTitle` and `title` are
/// the same field). A tab added or removed with its children is one change. Every other key of the document is
/// compared member by member (`/appearance/tintColor`, `/strings/fr/HOME_TAB`), without a `tab`.
///
/// The order is fixed: layout-level keys in the byte order of their pointers' keys, then removed tabs in the
/// older source's order, then the newer source's tabs depth first (each one's `added` or `moved`, then its
/// fields in key order).
public struct LayoutDiff: Sendable, Equatable {
    public var changes: [LayoutChange]

    public init(changes: [LayoutChange]) {
        self.changes = changes
    }

    /// The changes from `old` to `new`; nil stands for a version without a document (a deletion, or before the
    /// first version): every tab and key of the other side is then added or removed.
    /// - Throws: ``LayoutError`` when either tree cannot be compared tab by tab (a tab without `title` or
    ///   `rootViewController`, two tabs with one id, …). A source that breaks only a rule added after it was stored
    ///   is compared all the same.
    public init(from old: SourceNode?, to new: SourceNode?) throws(LayoutError) {
        let before = try DiffSide(old)
        let after = try DiffSide(new)
        var changes: [LayoutChange] = []
        compareMembers(before.layoutKeys, after.layoutKeys, pointer: "", tab: nil, into: &changes)
        compareTabs(before, after, into: &changes)
        self.changes = changes
    }

    /// The changes between two sources given as bytes (nil: no document), each read like an upload.
    /// - Throws: ``LayoutError`` when either source cannot be read or compared tab by tab.
    public init(
        from oldSource: [UInt8]?, fromFormat oldFormat: SourceFormat? = nil, to newSource: [UInt8]?, toFormat newFormat: SourceFormat? = nil
    ) throws(LayoutError) {
        let old = try oldSource.map { bytes throws(LayoutError) in try LayoutSource.readTree(bytes, format: oldFormat) }
        let new = try newSource.map { bytes throws(LayoutError) in try LayoutSource.readTree(bytes, format: newFormat) }
        try self.init(from: old, to: new)
    }

    public var isEmpty: Bool { changes.isEmpty }

    /// `{"account", "from", "to", "changes": [...]}` of `GET …/versions/{n}/diff` (`from` left out when
    /// there is no older version).
    public func document(account: String, from: Int?, to: Int) -> JSONValue {
        var object: [String: JSONValue] = [
            "account": .string(account), "to": .integer(Int64(to)), "changes": .array(changes.map(\.jsonValue)),
        ]
        if let from { object["from"] = .integer(Int64(from)) }
        return .object(object)
    }

    /// The `application/json` body: ``document(account:from:to:)`` in canonical JSON.
    public func jsonBody(account: String, from: Int?, to: Int) -> [UInt8] {
        CanonicalJSON.encode(document(account: account, from: from, to: to))
    }

    /// The `text/plain` body: one ``LayoutChange/line`` per change, each ended by a newline (empty: no change).
    public func plainText() -> String {
        changes.reduce(into: "") { text, change in text += change.line + "\n" }
    }
}

// MARK: - Comparing

/// One tab of one side: where it is and what it holds.
private struct DiffTab {
    var id: String
    var parent: String?
    var pointer: String
    var node: SourceNode
    /// Members by the field they set (aliases resolved), without `id` and `children`.
    var fields: [String: (key: String, node: SourceNode)]
}

/// One version's source, taken apart for comparison.
private struct DiffSide {
    /// The document's members other than `tabs` (none for seed 000's array).
    var layoutKeys: [String: (key: String, node: SourceNode)] = [:]
    var tabs: [String: DiffTab] = [:]
    /// Ids depth first, in source order.
    var order: [String] = []
    /// parent id ("" for the top level) → child ids in order.
    var siblings: [String: [String]] = [:]

    init(_ tree: SourceNode?) throws(LayoutError) {
        guard let tree else { return }
        // The validator resolves the ids (explicit, or derived from rootViewController). Its diagnostics do not stop
        // the comparison: a version stored under laxer rules than today's must still be comparable. What matching
        // needs is checked in add(_:_:parent:pointer:) instead.
        var validator = LayoutValidator()
        let document = validator.document(tree)
        self.diagnostics = validator.diagnostics
        let tabNodes: [SourceNode]
        let tabsPointer: String
        switch tree.value {
        case .array(let elements):
            tabNodes = elements
            tabsPointer = ""
        case .dictionary(let members):
            for member in members where member.key != "tabs" { layoutKeys[member.key] = (member.key, member.node) }
            if case .array(let elements)? = tree["tabs"]?.value { tabNodes = elements } else { tabNodes = [] }
            tabsPointer = "/tabs"
        default:
            tabNodes = []
            tabsPointer = ""
        }
        try add(tabNodes, document.tabs, parent: nil, pointer: tabsPointer)
    }

    /// What the validator said about this side, reported when its tabs cannot be matched.
    private var diagnostics: [FieldError] = []

    /// The validator keeps every tab it could read, in order: when it read them all, `nodes[i]` is `specs[i]`.
    /// - Throws: ``LayoutError`` when it could not (a tab without title or rootViewController, …) or when two tabs
    ///   share an id: such a source cannot be compared tab by tab.
    private mutating func add(_ nodes: [SourceNode], _ specs: [TabSpec], parent: String?, pointer: String) throws(LayoutError) {
        guard nodes.count == specs.count else { throw LayoutError(diagnostics) }
        for (index, (node, spec)) in zip(nodes, specs).enumerated() {
            guard tabs[spec.id] == nil else { throw LayoutError(diagnostics) }
            let tabPointer = JSONPointer.appending(pointer, index)
            var fields: [String: (key: String, node: SourceNode)] = [:]
            var childNodes: [SourceNode] = []
            var childrenKey = "children"
            if case .dictionary(let members) = node.value {
                for member in members {
                    let field = LayoutValidator.tabKey(member.key) ?? member.key
                    switch field {
                    case "id": continue
                    case "children":
                        childrenKey = member.key
                        if case .array(let elements) = member.node.value { childNodes = elements }
                    default: fields[field] = (member.key, member.node)
                    }
                }
            }
            tabs[spec.id] = DiffTab(id: spec.id, parent: parent, pointer: tabPointer, node: node, fields: fields)
            order.append(spec.id)
            siblings[parent ?? "", default: []].append(spec.id)
            try add(childNodes, spec.children, parent: spec.id, pointer: JSONPointer.appending(tabPointer, childrenKey))
        }
    }
}

/// Compares two sets of members (keyed by the field they set), in the byte order of the field names; dictionaries
/// on both sides are compared member by member, any other value as a whole.
private func compareMembers(
    _ old: [String: (key: String, node: SourceNode)], _ new: [String: (key: String, node: SourceNode)], pointer: String,
    tab: String?, into changes: inout [LayoutChange]
) {
    let fields = Set(old.keys).union(new.keys).sorted(by: CanonicalJSON.utf8Precedes)
    for field in fields {
        switch (old[field], new[field]) {
        case (let before?, let after?):
            compareValues(before.node, after.node, pointer: JSONPointer.appending(pointer, after.key), tab: tab, into: &changes)
        case (nil, let after?):
            changes.append(LayoutChange(.added, tab: tab, pointer: JSONPointer.appending(pointer, after.key), to: jsonValue(after.node)))
        case (let before?, nil):
            changes.append(
                LayoutChange(.removed, tab: tab, pointer: JSONPointer.appending(pointer, before.key), from: jsonValue(before.node)))
        case (nil, nil): break
        }
    }
}

private func compareValues(_ old: SourceNode, _ new: SourceNode, pointer: String, tab: String?, into changes: inout [LayoutChange]) {
    if case .dictionary(let before) = old.value, case .dictionary(let after) = new.value {
        compareMembers(members(before), members(after), pointer: pointer, tab: tab, into: &changes)
        return
    }
    let before = jsonValue(old)
    let after = jsonValue(new)
    if !sameValue(before, after) { changes.append(LayoutChange(.changed, tab: tab, pointer: pointer, from: before, to: after)) }
}

private func members(_ list: [SourceNode.Member]) -> [String: (key: String, node: SourceNode)] {
    var result: [String: (key: String, node: SourceNode)] = [:]
    for member in list { result[member.key] = (member.key, member.node) }
    return result
}

private func compareTabs(_ old: DiffSide, _ new: DiffSide, into changes: inout [LayoutChange]) {
    // A tab removed or added with its parent is part of the parent's value: one change, not one per tab.
    for id in old.order where new.tabs[id] == nil {
        let tab = old.tabs[id]!
        if let parent = tab.parent, new.tabs[parent] == nil { continue }
        changes.append(LayoutChange(.removed, tab: id, pointer: tab.pointer, from: jsonValue(tab.node)))
    }
    let stayed = stayingInPlace(old, new)
    for id in new.order {
        let tab = new.tabs[id]!
        guard let before = old.tabs[id] else {
            if let parent = tab.parent, old.tabs[parent] == nil { continue }
            changes.append(LayoutChange(.added, tab: id, pointer: tab.pointer, to: jsonValue(tab.node)))
            continue
        }
        if !stayed.contains(id) {
            changes.append(LayoutChange(.moved, tab: id, pointer: tab.pointer, from: .string(before.pointer), to: .string(tab.pointer)))
        }
        compareMembers(before.fields, tab.fields, pointer: tab.pointer, tab: id, into: &changes)
    }
}

/// The tabs both sides have under the same parent that keep their order relative to one another: the longest
/// common subsequence of each parent's children (ties broken the same way every time). The others moved.
private func stayingInPlace(_ old: DiffSide, _ new: DiffSide) -> Set<String> {
    var stayed: Set<String> = []
    for (parent, after) in new.siblings {
        guard let before = old.siblings[parent] else { continue }
        let a = before.filter { new.tabs[$0]?.parent ?? "" == parent && new.tabs[$0] != nil }
        let b = after.filter { old.tabs[$0]?.parent ?? "" == parent && old.tabs[$0] != nil }
        // lengths[i][j]: the LCS of a[i...] and b[j...] (at most 64 tabs per level, so 65 × 65 at most).
        var lengths = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                lengths[i][j] = a[i] == b[j] ? lengths[i + 1][j + 1] + 1 : max(lengths[i + 1][j], lengths[i][j + 1])
            }
        }
        var i = 0
        var j = 0
        while i < a.count, j < b.count {
            if a[i] == b[j] {
                stayed.insert(a[i])
                i += 1
                j += 1
            } else if lengths[i + 1][j] >= lengths[i][j + 1] {
                i += 1
            } else {
                j += 1
            }
        }
    }
    return stayed
}

/// A source value as JSON (dates as text, data as base64, as in ``SourceNode/jsonText()``; a validated layout holds
/// no null).
private func jsonValue(_ node: SourceNode) -> JSONValue {
    switch node.value {
    case .string(let s): .string(s)
    case .integer(let n): .integer(n)
    case .real(let x): .real(x)
    case .bool(let b): .bool(b)
    case .date(let d): .string(d)
    case .data(let bytes): .string(Base64.encode(bytes))
    case .array(let elements): .array(elements.map(jsonValue))
    case .dictionary(let members):
        .object(members.reduce(into: [:]) { object, member in object[member.key] = jsonValue(member.node) })
    case .null: .null
    }
}

/// Equal values, an integer equal to a real of the same value included (`49` and `49.0`).
private func sameValue(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
    switch (a, b) {
    case (.integer(let x)?, .real(let y)?), (.real(let y)?, .integer(let x)?): Double(x) == y
    case (.array(let x)?, .array(let y)?): x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
    case (.object(let x)?, .object(let y)?): x.count == y.count && x.allSatisfy { key, value in sameValue(value, y[key]) }
    default: a == b
    }
}
