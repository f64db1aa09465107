/// The validator's readers of options (More, appearance, strings tables) and of single values.
extension LayoutValidator {
    // MARK: Options

    mutating func moreTab(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> MoreTab? {
        guard case .dictionary(let members) = node.value else {
            report(pointer(), node, "must be a dictionary, found \(node.kindName)")
            return nil
        }
        var more = MoreTab()
        for member in members {
            func memberPointer() -> String { JSONPointer.appending(pointer(), member.key) }
            switch member.key {
            case "title": more.title = string(member.node, memberPointer())
            case "image": more.image = string(member.node, memberPointer())
            case "selectedImage": more.selectedImage = string(member.node, memberPointer())
            case "accessibilityLabel": more.accessibilityLabel = string(member.node, memberPointer())
            case "accessibilityHint": more.accessibilityHint = string(member.node, memberPointer())
            case let key where key.hasPrefix("x-"): more.extensions[key] = json(member.node, memberPointer())
            default:
                report(
                    memberPointer(), member.node,
                    "unknown key '\(member.key)' (title, image, selectedImage, accessibilityLabel, accessibilityHint, or x-…)")
            }
        }
        return more
    }

    mutating func appearance(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> Appearance? {
        guard case .dictionary(let members) = node.value else {
            report(pointer(), node, "must be a dictionary, found \(node.kindName)")
            return nil
        }
        var appearance = Appearance()
        for member in members {
            func memberPointer() -> String { JSONPointer.appending(pointer(), member.key) }
            let value = member.node
            switch member.key {
            case "height":
                switch value.value {
                case .integer(let n) where (30...120).contains(n): appearance.height = .integer(n)
                case .real(let x) where (30...120).contains(x):
                    appearance.height = x.rounded() == x ? .integer(Int64(x)) : .real(x)
                default: report(memberPointer(), value, "must be a number of points from 30 to 120")
                }
            case "backgroundColor", "tintColor", "unselectedTintColor":
                guard let text = string(value, memberPointer()) else { continue }
                guard let colour = normalizedColour(text) else {
                    report(memberPointer(), value, "'\(text)' is not a colour #RRGGBB or #RRGGBBAA")
                    continue
                }
                switch member.key {
                case "backgroundColor": appearance.backgroundColor = colour
                case "tintColor": appearance.tintColor = colour
                default: appearance.unselectedTintColor = colour
                }
            case "animator":
                appearance.animator = animator(value, memberPointer())
            case "dark":
                appearance.dark = darkColours(value, memberPointer())
            case let key where key.hasPrefix("x-"):
                appearance.extensions[key] = json(value, memberPointer())
            default:
                report(
                    memberPointer(), value,
                    "unknown key '\(member.key)' (height, backgroundColor, tintColor, unselectedTintColor, animator, dark, or x-…)")
            }
        }
        return appearance
    }

    /// `appearance.dark`: the three colour keys, nothing else.
    mutating func darkColours(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> DarkColours? {
        guard case .dictionary(let members) = node.value else {
            report(pointer(), node, "must be a dictionary of colours, found \(node.kindName)")
            return nil
        }
        var dark = DarkColours()
        for member in members {
            func memberPointer() -> String { JSONPointer.appending(pointer(), member.key) }
            guard ["backgroundColor", "tintColor", "unselectedTintColor"].contains(member.key) else {
                report(memberPointer(), member.node, "unknown key '\(member.key)' (backgroundColor, tintColor, unselectedTintColor)")
                continue
            }
            guard let text = string(member.node, memberPointer()) else { continue }
            guard let colour = normalizedColour(text) else {
                report(memberPointer(), member.node, "'\(text)' is not a colour #RRGGBB or #RRGGBBAA")
                continue
            }
            switch member.key {
            case "backgroundColor": dark.backgroundColor = colour
            case "tintColor": dark.tintColor = colour
            default: dark.unselectedTintColor = colour
            }
        }
        return dark
    }

    /// `groups`: `[{"id", "title", "tabs": [tab ids]}]`, group ids unique (members are checked by ``checkGroupMembers``).
    mutating func groups(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> [TabGroup]? {
        guard case .array(let elements) = node.value else {
            report(pointer(), node, "must be an array of groups {id, title, tabs}, found \(node.kindName)")
            return nil
        }
        var groups: [TabGroup] = []
        var firstPointer: [String: String] = [:]
        for (i, element) in elements.enumerated() {
            func groupPointer() -> String { JSONPointer.appending(pointer(), i) }
            guard case .dictionary(let members) = element.value else {
                report(groupPointer(), element, "a group is a dictionary {id, title, tabs}, found \(element.kindName)")
                continue
            }
            var group = TabGroup(id: "", title: "", tabs: [])
            var valid = true
            for member in members {
                func memberPointer() -> String { JSONPointer.appending(groupPointer(), member.key) }
                switch member.key {
                case "id":
                    guard let id = string(member.node, memberPointer()) else {
                        valid = false
                        continue
                    }
                    if !isValidTabID(id) {
                        report(memberPointer(), member.node, "'\(id)' is not a group id ([a-z0-9][a-z0-9_-]*, at most 64 characters)")
                        valid = false
                    } else if let earlier = firstPointer[id] {
                        report(memberPointer(), member.node, "the group id '\(id)' is already used by the group at \(earlier)")
                    } else {
                        firstPointer[id] = groupPointer()
                    }
                    group.id = id
                case "title": group.title = string(member.node, memberPointer()) ?? ""
                case "tabs": group.tabs = idList(member.node, memberPointer())
                default: report(memberPointer(), member.node, "unknown key '\(member.key)' (id, title, tabs)")
                }
            }
            for required in ["id", "title", "tabs"] where element[required] == nil {
                report(groupPointer(), element, "the group has no \(required)")
                valid = false
            }
            if valid { groups.append(group) }
        }
        return groups
    }

    /// Each tab id at most once across `groups`, and (when `tabs` is given: a layout that extends none) one of them.
    mutating func checkGroupMembers(_ node: SourceNode, tabs: [TabSpec]?) {
        guard case .array(let elements) = node.value else { return }
        let known = tabs.map { Set($0.map(\.id)) }
        var claimed: [String: String] = [:]
        for (i, element) in elements.enumerated() {
            guard let list = element["tabs"], case .array(let ids) = list.value,
                case .string(let groupID)? = element["id"]?.value
            else { continue }
            for (t, idNode) in ids.enumerated() {
                guard case .string(let id) = idNode.value else { continue }
                let pointer = "/groups/\(i)/tabs/\(t)"
                if let known, !known.contains(id) {
                    report(pointer, idNode, "no tab has the id '\(id)'")
                } else if let earlier = claimed[id] {
                    report(pointer, idNode, "the tab '\(id)' is already in the group '\(earlier)' (a tab is in at most one group)")
                } else {
                    claimed[id] = groupID
                }
            }
        }
    }

    mutating func animator(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> Animator? {
        guard case .dictionary(let members) = node.value else {
            report(pointer(), node, "must be a dictionary {name, params}, found \(node.kindName)")
            return nil
        }
        var name: String?
        var params: [String: JSONValue]?
        for member in members {
            func memberPointer() -> String { JSONPointer.appending(pointer(), member.key) }
            switch member.key {
            case "name":
                if let text = string(member.node, memberPointer()) {
                    if Self.animatorNames.contains(text) || (text.hasPrefix("x-") && text.count > 2) {
                        name = text
                    } else {
                        report(memberPointer(), member.node, "'\(text)' is not an animator (none, underline, bounce, fade, or x-…)")
                    }
                }
            case "params":
                if case .dictionary = member.node.value, case .object(let object) = json(member.node, memberPointer()) {
                    params = object
                } else {
                    report(memberPointer(), member.node, "must be a dictionary, found \(member.node.kindName)")
                }
            default:
                report(memberPointer(), member.node, "unknown key '\(member.key)' (name, params)")
            }
        }
        guard let name else {
            if node["name"] == nil { report(pointer(), node, "the animator has no name") }
            return nil
        }
        return Animator(name: name, params: params)
    }

    mutating func strings(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> [String: [String: String]] {
        guard case .dictionary(let locales) = node.value else {
            report(pointer(), node, "must be a dictionary of locale → key → text, found \(node.kindName)")
            return [:]
        }
        var result: [String: [String: String]] = [:]
        for locale in locales {
            func localePointer() -> String { JSONPointer.appending(pointer(), locale.key) }
            guard isValidLocale(locale.key) else {
                report(localePointer(), locale.node, "'\(locale.key)' is not a locale tag such as en or fr-CA")
                continue
            }
            guard case .dictionary(let entries) = locale.node.value else {
                report(localePointer(), locale.node, "must be a dictionary of key → text, found \(locale.node.kindName)")
                continue
            }
            var table: [String: String] = [:]
            for entry in entries {
                if let text = string(entry.node, JSONPointer.appending(localePointer(), entry.key)) { table[entry.key] = text }
            }
            result[locale.key] = table
        }
        return result
    }

    // MARK: Values

    mutating func string(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> String? {
        guard case .string(let text) = node.value else {
            report(pointer(), node, "must be a string, found \(node.kindName)")
            return nil
        }
        return text
    }

    /// A pass-through value (params, x- keys); null has no place in a layout (property lists have none).
    mutating func json(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> JSONValue {
        switch node.value {
        case .string(let s): return .string(s)
        case .integer(let n): return .integer(n)
        case .real(let x): return .real(x)
        case .bool(let b): return .bool(b)
        case .date(let d): return .string(d)
        case .data(let bytes): return .string(Base64.encode(bytes))
        case .array(let elements):
            return .array(elements.enumerated().map { json($1, JSONPointer.appending(pointer(), $0)) })
        case .dictionary(let members):
            var object: [String: JSONValue] = [:]
            for member in members { object[member.key] = json(member.node, JSONPointer.appending(pointer(), member.key)) }
            return .object(object)
        case .null:
            report(pointer(), node, "null is not allowed (leave the key out; property lists have no null)")
            return .bool(false)
        }
    }

    /// Compiled layouts are served as XML property lists too, and XML 1.0 (§2.2) cannot carry every character.
    static func unservable(_ scalar: Unicode.Scalar) -> String {
        "the character \(XMLCharacters.name(scalar)) cannot be served in an XML property list (XML 1.0 §2.2)"
    }

    /// Every string and key within the limit and servable as XML; the pointer is built only for an offender.
    mutating func checkStringLengths(_ node: SourceNode, path: inout BoundedPointerPath) {
        switch node.value {
        case .string(let text) where text.utf8.count > LayoutLimits.stringBytes:
            report(path.pointer, node, "a string of \(text.utf8.count) bytes; at most \(LayoutLimits.stringBytes)")
        case .string(let text):
            if let forbidden = XMLCharacters.firstForbidden(in: text) { report(path.pointer, node, Self.unservable(forbidden)) }
        case .array(let elements):
            for (i, element) in elements.enumerated() {
                path.push(i)
                checkStringLengths(element, path: &path)
                path.pop()
            }
        case .dictionary(let members):
            for member in members {
                path.push(member.key)
                if member.key.utf8.count > LayoutLimits.stringBytes {
                    report(path.pointer, member.node, "a key of \(member.key.utf8.count) bytes; at most \(LayoutLimits.stringBytes)")
                } else if let forbidden = XMLCharacters.firstForbidden(in: member.key) {
                    report(path.pointer, member.node, "in the key, " + Self.unservable(forbidden))
                }
                checkStringLengths(member.node, path: &path)
                path.pop()
            }
        default: break
        }
    }
}

/// `[a-z0-9][a-z0-9_-]*`, at most 64 characters.
func isValidTabID(_ id: String) -> Bool {
    guard let first = id.utf8.first, id.utf8.count <= 64 else { return false }
    func allowed(_ b: UInt8) -> Bool { (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) }
    return allowed(first) && id.utf8.allSatisfy { allowed($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
}

/// `MyApp.HomeViewController` → `home`; characters an id cannot hold become `-`.
func derivedTabID(_ rootViewController: String) -> String {
    var name = Substring(rootViewController.split(separator: ".").last ?? "")
    if name.hasSuffix("ViewController"), name.count > "ViewController".count { name = name.dropLast("ViewController".count) }
    var id = ""
    for scalar in name.lowercased().unicodeScalars {
        let b = scalar.value
        if (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || b == 0x5F || b == 0x2D {
            id.unicodeScalars.append(scalar)
        } else {
            id += "-"
        }
    }
    while id.hasPrefix("-") || id.hasPrefix("_") { id.removeFirst() }
    if id.isEmpty { id = "tab" }
    return String(id.prefix(56))
}

/// `#abc123` → `#ABC123`; nil unless `#RRGGBB` or `#RRGGBBAA`.
func normalizedColour(_ text: String) -> String? {
    let digits = text.utf8.dropFirst()
    guard text.hasPrefix("#"), digits.count == 6 || digits.count == 8, digits.allSatisfy({ hexDigit($0) != nil }) else {
        return nil
    }
    return text.uppercased()
}
