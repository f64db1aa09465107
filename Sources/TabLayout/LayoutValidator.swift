/// Turns a ``SourceNode`` tree into a ``LayoutDocument``, collecting every problem with its pointer and line.
struct LayoutValidator {
    var found: [FieldError] = []
    /// Problems found past ``DiagnosticLimits/count`` (counted, not kept: their pointers are never built).
    var omitted = 0
    /// Explicit tab ids in source order, with the pointer and node of each (for naming the tab that repeats one).
    var explicitIDs: [(id: String, pointer: String, node: SourceNode)] = []
    /// The `role` of each search tab, with its pointer and node (more than one is an error naming all).
    var searchRoles: [(pointer: String, node: SourceNode)] = []

    /// The problems found, within ``DiagnosticLimits`` (the last one says how many more there were).
    var diagnostics: [FieldError] { DiagnosticLimits.capped(found, omitted: omitted) }

    mutating func report(_ pointer: @autoclosure () -> String, _ node: SourceNode?, _ message: @autoclosure () -> String) {
        guard found.count < DiagnosticLimits.count else {
            omitted += 1
            return
        }
        // Shortened at once: a source full of long keys keeps no long strings here.
        found.append(
            FieldError(
                pointer: DiagnosticLimits.shortened(pointer(), to: DiagnosticLimits.pointerBytes), line: node?.line,
                message: DiagnosticLimits.shortened(message(), to: DiagnosticLimits.messageBytes, keepingEnd: false)))
    }

    /// Seed 000's tab keys, each an alias of a tab key (which one: ``tabKey(_:)``).
    static let legacyTabKeys = ["TabBarTitle", "TabBarImage", "TabBarSelectedImage", "RootViewController", "TabBarBadge"]
    /// The tab key that `key` names (a seed-000 alias mapped to its key), nil for none. It runs for every member
    /// of every tab: the length picks a handful of candidates, which short string comparisons settle (cheaper
    /// than hashing the key for a dictionary).
    static func tabKey(_ key: String) -> String? {
        switch key.utf8.count {
        case 2: key == "id" ? key : nil
        case 4: key == "role" ? key : nil
        case 5: key == "title" || key == "image" || key == "badge" ? key : nil
        case 6: key == "params" ? key : nil
        case 8: key == "reselect" || key == "children" ? key : nil
        case 9: key == "platforms" ? key : nil
        case 10: key == "navigation" ? key : nil
        case 11: key == "TabBarTitle" ? "title" : key == "TabBarImage" ? "image" : key == "TabBarBadge" ? "badge" : nil
        case 13: key == "selectedImage" || key == "minAppVersion" || key == "maxAppVersion" ? key : nil
        case 17: key == "accessibilityHint" ? key : nil
        case 18:
            key == "rootViewController" || key == "RootViewController"
                ? "rootViewController" : key == "accessibilityLabel" ? key : nil
        case 19: key == "TabBarSelectedImage" ? "selectedImage" : nil
        default: nil
        }
    }
    static let animatorNames: Set<String> = ["none", "underline", "bounce", "fade"]

    mutating func document(_ root: SourceNode) -> LayoutDocument {
        var path = BoundedPointerPath()
        checkStringLengths(root, path: &path)
        switch root.value {
        case .array(let elements):
            var document = LayoutDocument(tabs: tabList(elements, node: root, pointer: "", level: 0))
            assignDefaultIDs(&document.tabs)
            checkUniqueIDs()
            checkSearchRoles()
            return document
        case .dictionary(let members):
            return dictionaryDocument(members, root)
        default:
            report("", root, "a layout is a dictionary (the document shape) or an array of tabs (seed 000's shape), found \(root.kindName)")
            return LayoutDocument(tabs: [])
        }
    }

    mutating func dictionaryDocument(_ members: [SourceNode.Member], _ root: SourceNode) -> LayoutDocument {
        var document = LayoutDocument(tabs: [])
        var tabsGiven = false
        for member in members {
            func pointer() -> String { JSONPointer.appending("", member.key) }
            let node = member.node
            if member.key.hasPrefix("x-") {
                document.extensions[member.key] = json(node, pointer())
                continue
            }
            switch member.key {
            case "schemaVersion":
                if case .integer(let version) = node.value {
                    if version != 1 { report(pointer(), node, "schemaVersion \(version) is not supported (only 1)") }
                } else {
                    report(pointer(), node, "must be the integer 1, found \(node.kindName)")
                }
            case "extends":
                if let name = string(node, pointer()) {
                    if AccountName(name) != nil {
                        document.extends = name
                    } else {
                        report(pointer(), node, "'\(name)' is not an account name ([A-Za-z0-9._-]{1,128})")
                    }
                }
            case "tabs":
                tabsGiven = true
                if case .array(let elements) = node.value {
                    document.tabs = tabList(elements, node: node, pointer: pointer(), level: 0)
                } else {
                    report(pointer(), node, "must be an array of tabs, found \(node.kindName)")
                }
            case "remove", "order":
                let ids = idList(node, pointer())
                if member.key == "remove" { document.remove = ids } else { document.order = ids }
            case "initialTab":
                switch node.value {
                case .string(let id): document.initialTab = .id(id)
                case .integer(let index) where index >= 0 && index < 4096: document.initialTab = .index(Int(index))
                default: report(pointer(), node, "must be a tab id or a tab index (an integer ≥ 0), found \(node.kindName)")
                }
            case "maxVisibleTabs":
                if case .integer(let n) = node.value, n >= 2, n <= Int64(LayoutLimits.tabsPerLevel) {
                    document.maxVisibleTabs = Int(n)
                } else {
                    report(pointer(), node, "must be an integer from 2 to \(LayoutLimits.tabsPerLevel) (the bar's items, More included)")
                }
            case "defaultLocale":
                if let locale = string(node, pointer()) {
                    if isValidLocale(locale) {
                        document.defaultLocale = locale
                    } else {
                        report(pointer(), node, "'\(locale)' is not a locale tag such as en or fr-CA")
                    }
                }
            case "moreTab":
                document.moreTab = moreTab(node, pointer())
            case "appearance":
                document.appearance = appearance(node, pointer())
            case "strings":
                document.strings = strings(node, pointer())
            case "groups":
                document.groups = groups(node, pointer())
            default:
                report(pointer(), node, "unknown key '\(member.key)' (custom keys start with x-)")
            }
        }
        if document.extends == nil {
            if !tabsGiven { report("/tabs", root, "is required (or name a base layout with extends)") }
            if let remove = root["remove"] { report("/remove", remove, "only applies with extends") }
            if let order = root["order"] { report("/order", order, "only applies with extends") }
        }
        assignDefaultIDs(&document.tabs)
        checkUniqueIDs()
        checkSearchRoles()
        if document.groups != nil, let node = root["groups"] {
            checkGroupMembers(node, tabs: document.extends == nil ? document.tabs : nil)
        }
        if document.extends == nil, let initial = document.initialTab {
            switch initial {
            case .id(let id) where !document.tabs.contains(where: { $0.id == id }):
                report("/initialTab", root["initialTab"], "no tab has the id '\(id)'")
            case .index(let index) where index >= document.tabs.count:
                report("/initialTab", root["initialTab"], "index \(index) is out of range (\(document.tabs.count) tabs)")
            default: break
            }
        }
        return document
    }

    // MARK: Tabs

    mutating func tabList(_ elements: [SourceNode], node: SourceNode, pointer: @autoclosure () -> String, level: Int) -> [TabSpec] {
        if elements.count > LayoutLimits.tabsPerLevel {
            report(pointer(), node, "\(elements.count) tabs; at most \(LayoutLimits.tabsPerLevel) per level")
        }
        var tabs: [TabSpec] = []
        for (i, element) in elements.enumerated() {
            if let tab = tab(element, JSONPointer.appending(pointer(), i), level: level) { tabs.append(tab) }
        }
        return tabs
    }

    mutating func tab(_ node: SourceNode, _ pointer: @autoclosure () -> String, level: Int) -> TabSpec? {
        guard case .dictionary(let members) = node.value else {
            report(pointer(), node, "a tab is a dictionary, found \(node.kindName)")
            return nil
        }
        var tab = TabSpec(id: "", title: "", rootViewController: "", children: [], extensions: [:])
        // (key, as written) of the members read so far: a handful, so a list.
        var seen: [(name: String, key: String)] = []
        seen.reserveCapacity(members.count)
        var valid = true
        for member in members {
            let key = member.key
            func memberPointer() -> String { JSONPointer.appending(pointer(), key) }
            let value = member.node
            if key.hasPrefix("x-") {
                tab.extensions[key] = json(value, memberPointer())
                continue
            }
            guard let name = Self.tabKey(key) else {
                report(memberPointer(), value, "unknown tab key '\(key)' (custom keys start with x-)")
                continue
            }
            if let earlier = seen.first(where: { $0.name == name }) {
                report(memberPointer(), value, "'\(key)' repeats '\(earlier.key)'")
                continue
            }
            seen.append((name, key))
            switch name {
            case "id":
                if let id = string(value, memberPointer()) {
                    if isValidTabID(id) {
                        tab.id = id
                        explicitIDs.append((id, memberPointer(), value))
                    } else {
                        report(memberPointer(), value, "'\(id)' is not a tab id ([a-z0-9][a-z0-9_-]*, at most 64 characters)")
                    }
                }
            case "title": tab.title = string(value, memberPointer()) ?? ""
            case "accessibilityLabel": tab.accessibilityLabel = string(value, memberPointer())
            case "accessibilityHint": tab.accessibilityHint = string(value, memberPointer())
            case "role":
                if let text = string(value, memberPointer()) {
                    if let role = TabRole(rawValue: text) {
                        tab.role = role
                        if role == .search { searchRoles.append((memberPointer(), value)) }
                    } else {
                        report(
                            memberPointer(), value, "'\(text)' is not a role (\(TabRole.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                }
            case "image": tab.image = string(value, memberPointer())
            case "selectedImage": tab.selectedImage = string(value, memberPointer())
            case "rootViewController":
                if let name = string(value, memberPointer()) {
                    if name.isEmpty { report(memberPointer(), value, "must not be empty") }
                    tab.rootViewController = name
                }
            case "navigation":
                if case .bool(let flag) = value.value {
                    tab.navigation = flag
                } else {
                    report(memberPointer(), value, "must be a boolean, found \(value.kindName)")
                }
            case "reselect":
                if let mode = string(value, memberPointer()) {
                    if mode == "popToRoot" || mode == "none" {
                        tab.reselect = mode
                    } else {
                        report(memberPointer(), value, "'\(mode)' is not popToRoot or none")
                    }
                }
            case "badge":
                tab.badge = string(value, memberPointer())
            case "params":
                if case .dictionary = value.value, case .object(let object) = json(value, memberPointer()) {
                    tab.params = object
                } else if case .dictionary = value.value {
                } else {
                    report(memberPointer(), value, "must be a dictionary, found \(value.kindName)")
                }
            case "platforms":
                tab.platforms = platforms(value, memberPointer())
            case "minAppVersion", "maxAppVersion":
                if let text = string(value, memberPointer()) {
                    if let version = AppVersion(text) {
                        if name == "minAppVersion" { tab.minAppVersion = version } else { tab.maxAppVersion = version }
                    } else {
                        report(memberPointer(), value, "'\(text)' is not a dotted version such as 2.1 or 3.0.2")
                    }
                }
            case "children":
                guard case .array(let elements) = value.value else {
                    report(memberPointer(), value, "must be an array of tabs, found \(value.kindName)")
                    continue
                }
                if level + 1 > LayoutLimits.childDepth {
                    report(memberPointer(), value, "children nest at most \(LayoutLimits.childDepth) levels deep")
                    continue
                }
                tab.children = tabList(elements, node: value, pointer: memberPointer(), level: level + 1)
            default: break
            }
        }
        for required in ["title", "rootViewController"] where !seen.contains(where: { $0.name == required }) {
            let legacy = Self.legacyTabKeys.first { Self.tabKey($0) == required } ?? required
            report(pointer(), node, "the tab has no \(required) (or \(legacy))")
            valid = false
        }
        if let min = tab.minAppVersion, let max = tab.maxAppVersion, min > max {
            report(
                JSONPointer.appending(pointer(), "minAppVersion"), node["minAppVersion"],
                "minAppVersion \(min) is above maxAppVersion \(max)"
            )
        }
        return valid ? tab : nil
    }

    mutating func platforms(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> Set<Platform>? {
        guard case .array(let elements) = node.value else {
            report(pointer(), node, "must be an array of platforms, found \(node.kindName)")
            return nil
        }
        var result = Set<Platform>(minimumCapacity: elements.count)
        for (i, element) in elements.enumerated() {
            func elementPointer() -> String { JSONPointer.appending(pointer(), i) }
            guard let name = string(element, elementPointer()) else { continue }
            if let platform = Platform(rawValue: name) {
                result.insert(platform)
            } else {
                report(elementPointer(), element, "'\(name)' is not one of \(Platform.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        return result
    }

    mutating func idList(_ node: SourceNode, _ pointer: @autoclosure () -> String) -> [String] {
        guard case .array(let elements) = node.value else {
            report(pointer(), node, "must be an array of tab ids, found \(node.kindName)")
            return []
        }
        return elements.enumerated().compactMap { i, element in string(element, JSONPointer.appending(pointer(), i)) }
    }

    /// Ids derived from rootViewController where none was given: module prefix and `ViewController` dropped,
    /// lower-cased, `-2`, `-3` … on a clash with any id of the layout.
    mutating func assignDefaultIDs(_ tabs: inout [TabSpec]) {
        var taken: Set<String> = []
        func collect(_ tabs: [TabSpec]) {
            for tab in tabs {
                if !tab.id.isEmpty { taken.insert(tab.id) }
                collect(tab.children)
            }
        }
        collect(tabs)
        func assign(_ tabs: inout [TabSpec]) {
            for i in tabs.indices {
                if tabs[i].id.isEmpty {
                    let base = derivedTabID(tabs[i].rootViewController)
                    var candidate = base
                    var n = 2
                    while taken.contains(candidate) {
                        candidate = "\(base)-\(n)"
                        n += 1
                    }
                    taken.insert(candidate)
                    tabs[i].id = candidate
                }
                assign(&tabs[i].children)
            }
        }
        assign(&tabs)
    }

    /// A second search tab is reported at the `role` of every search tab, each naming the others.
    mutating func checkSearchRoles() {
        guard searchRoles.count > 1 else { return }
        for (pointer, node) in searchRoles {
            let others = searchRoles.map(\.pointer).filter { $0 != pointer }.joined(separator: ", ")
            report(pointer, node, "a layout has at most one search tab; \(others) is one too")
        }
    }

    /// A repeated id is reported at the `id` of each tab that repeats it (`/tabs/3/id`), naming the first. Ids
    /// derived from rootViewController never clash (``assignDefaultIDs(_:)`` skips every id taken), so only the
    /// explicit ones, in source order, need checking.
    mutating func checkUniqueIDs() {
        var first: [String: String] = [:]
        for (id, pointer, node) in explicitIDs {
            if let earlier = first[id] {
                report(pointer, node, "the id '\(id)' is already used by the tab at \(earlier) (ids are unique in the whole layout)")
            } else {
                first[id] = pointer
            }
        }
    }
}
