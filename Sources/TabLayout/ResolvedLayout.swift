/// A layout with its inheritance applied: everything a client variant is compiled from.
public struct ResolvedLayout: Sendable, Equatable {
    /// The account whose layout this is (`default` for the fallback).
    public var name: String
    /// The stored version, when the layout comes from a store.
    public var version: Int?
    public var tabs: [TabSpec]
    public var initialTab: InitialTab?
    public var maxVisibleTabs: Int?
    public var defaultLocale: String
    public var moreTab: MoreTab?
    public var appearance: Appearance
    public var strings: [String: [String: String]]
    public var extensions: [String: JSONValue]
    /// The sidebar's sections, each naming only tabs the layout has (empty: none).
    public var groups: [TabGroup] = []
    /// The app-version bounds of every tab, sorted.
    public var versionBounds: [AppVersion]
    /// The accounts this layout extends, nearest first.
    public var bases: [String]
}

/// Applies `extends` chains: base first, then each overlay (tabs replaced in place by id, new ids
/// appended, then `remove`, then `order`; options and strings overlaid key by key).
public enum LayoutResolver {
    /// The server's locale when a layout names no `defaultLocale`.
    public static let serverDefaultLocale = "en"

    /// - Parameters:
    ///   - name: the account whose document this is.
    ///   - lookup: the current document of another account, or nil when it has none.
    ///   - strict: refuse `remove`/`order` ids the base does not have (on writes); rebuilds after a base
    ///     changed pass false and ignore them.
    /// - Throws: ``LayoutError`` for a missing base, a cycle, a chain deeper than 8, or bad references.
    public static func resolve(
        name: String, version: Int?, document: LayoutDocument, strict: Bool = true,
        lookup: (String) -> LayoutDocument?
    ) throws(LayoutError) -> ResolvedLayout {
        var chain: [(name: String, document: LayoutDocument)] = [(name, document)]
        var current = document
        while let base = current.extends {
            if chain.contains(where: { $0.name == base }) {
                throw LayoutError(
                    pointer: "/extends", line: nil,
                    "extends '\(base)' makes a cycle: \((chain.map(\.name) + [base]).joined(separator: " → "))")
            }
            guard chain.count < LayoutLimits.inheritanceDepth else {
                throw LayoutError(
                    pointer: "/extends", line: nil, "the extends chain is deeper than \(LayoutLimits.inheritanceDepth) layouts")
            }
            guard let baseDocument = lookup(base) else {
                let hint = chain.count == 1 ? "" : " (reached through \(chain.map(\.name).joined(separator: " → ")))"
                throw LayoutError(pointer: "/extends", line: nil, "extends '\(base)', which has no layout\(hint)")
            }
            chain.append((base, baseDocument))
            current = baseDocument
        }
        var merged = chain.last!.document
        var diagnostics: [FieldError] = []
        for index in stride(from: chain.count - 2, through: 0, by: -1) {
            merged = apply(chain[index].document, onto: merged, strict: strict, isTarget: index == 0, diagnostics: &diagnostics)
        }
        if let initial = merged.initialTab, strict {
            switch initial {
            case .id(let id) where !merged.tabs.contains(where: { $0.id == id }):
                diagnostics.append(.init(pointer: "/initialTab", line: nil, message: "no tab has the id '\(id)'"))
            case .index(let index) where index >= merged.tabs.count:
                diagnostics.append(
                    .init(pointer: "/initialTab", line: nil, message: "index \(index) is out of range (\(merged.tabs.count) tabs)"))
            default: break
            }
        }
        if merged.tabs.count > LayoutLimits.tabsPerLevel {
            diagnostics.append(
                .init(
                    pointer: "/tabs", line: nil,
                    message: "\(merged.tabs.count) tabs after inheritance; at most \(LayoutLimits.tabsPerLevel)"))
        }
        if strict { checkSearchTabs(merged.tabs, own: document.tabs, diagnostics: &diagnostics) }
        let groups = resolvedGroups(merged, ownGroups: document.groups ?? [], strict: strict, diagnostics: &diagnostics)
        guard diagnostics.isEmpty else { throw LayoutError(diagnostics) }
        return ResolvedLayout(
            name: name, version: version, tabs: merged.tabs, initialTab: merged.initialTab,
            maxVisibleTabs: merged.maxVisibleTabs, defaultLocale: merged.defaultLocale ?? serverDefaultLocale,
            moreTab: merged.moreTab, appearance: merged.appearance ?? Appearance(), strings: merged.strings,
            extensions: merged.extensions, groups: groups, versionBounds: merged.versionBounds,
            bases: chain.dropFirst().map(\.name))
    }

    /// At most one search tab after inheritance: an overlay's own search tab is refused at its `role` when the layout
    /// it extends has another.
    private static func checkSearchTabs(_ merged: [TabSpec], own: [TabSpec], diagnostics: inout [FieldError]) {
        var searchIDs: [String] = []
        func collect(_ tabs: [TabSpec]) {
            for tab in tabs {
                if tab.role == .search { searchIDs.append(tab.id) }
                collect(tab.children)
            }
        }
        collect(merged)
        guard searchIDs.count > 1 else { return }
        func report(_ tabs: [TabSpec], _ pointer: String) {
            for (i, tab) in tabs.enumerated() {
                let here = "\(pointer)/\(i)"
                if tab.role == .search, searchIDs.contains(tab.id) {
                    let others = searchIDs.filter { $0 != tab.id }.map { "'\($0)'" }.joined(separator: ", ")
                    let message = "a layout has at most one search tab; the tab \(others) is one too"
                    diagnostics.append(.init(pointer: here + "/role", line: nil, message: message))
                }
                report(tab.children, here + "/children")
            }
        }
        report(own, "/tabs")
    }

    /// The merged groups with every tab id the merged layout has, each once. An id of the document's own groups that
    /// no tab has, or that an earlier group lists, is an error on writes (`strict`); an inherited group's ids that
    /// the overlay removed are dropped quietly, as are a rebuild's.
    private static func resolvedGroups(
        _ merged: LayoutDocument, ownGroups: [TabGroup], strict: Bool, diagnostics: inout [FieldError]
    ) -> [TabGroup] {
        let ids = Set(merged.tabs.map(\.id))
        var claimed: [String: String] = [:]
        var result: [TabGroup] = []
        for (g, group) in (merged.groups ?? []).enumerated() {
            let own = ownGroups.firstIndex { $0.id == group.id }
            var kept = group
            kept.tabs = []
            for (t, id) in group.tabs.enumerated() {
                let pointer = "/groups/\(own ?? g)/tabs/\(t)"
                if !ids.contains(id) {
                    if strict, own != nil { diagnostics.append(.init(pointer: pointer, line: nil, message: "no tab has the id '\(id)'")) }
                } else if let earlier = claimed[id] {
                    if strict, own != nil {
                        diagnostics.append(
                            .init(
                                pointer: pointer, line: nil,
                                message: "the tab '\(id)' is already in the group '\(earlier)' (a tab is in at most one group)"))
                    }
                } else {
                    claimed[id] = group.id
                    kept.tabs.append(id)
                }
            }
            result.append(kept)
        }
        return result
    }

    private static func apply(
        _ overlay: LayoutDocument, onto base: LayoutDocument, strict: Bool, isTarget: Bool,
        diagnostics: inout [FieldError]
    ) -> LayoutDocument {
        var result = base
        var tabs = base.tabs
        for tab in overlay.tabs {
            if let index = tabs.firstIndex(where: { $0.id == tab.id }) { tabs[index] = tab } else { tabs.append(tab) }
        }
        for (i, id) in overlay.remove.enumerated() {
            if let index = tabs.firstIndex(where: { $0.id == id }) {
                tabs.remove(at: index)
            } else if strict && isTarget {
                diagnostics.append(.init(pointer: "/remove/\(i)", line: nil, message: "no inherited tab has the id '\(id)'"))
            }
        }
        var ordered: [TabSpec] = []
        for (i, id) in overlay.order.enumerated() {
            if let index = tabs.firstIndex(where: { $0.id == id }) {
                ordered.append(tabs.remove(at: index))
            } else if strict && isTarget && !ordered.contains(where: { $0.id == id }) {
                diagnostics.append(.init(pointer: "/order/\(i)", line: nil, message: "no tab has the id '\(id)'"))
            }
        }
        result.tabs = ordered + tabs
        result.extends = nil
        result.remove = []
        result.order = []
        result = overlaying(result, with: overlay, \.initialTab, \.maxVisibleTabs, \.defaultLocale)
        if let more = overlay.moreTab {
            var merged = overlaying(
                base.moreTab ?? MoreTab(), with: more, \.title, \.image, \.selectedImage, \.accessibilityLabel, \.accessibilityHint)
            merged.extensions.merge(more.extensions) { $1 }
            result.moreTab = merged
        }
        if let look = overlay.appearance {
            var merged = overlaying(
                base.appearance ?? Appearance(), with: look, \.height, \.backgroundColor, \.tintColor, \.unselectedTintColor, \.animator)
            if let dark = look.dark {
                merged.dark = overlaying(merged.dark ?? DarkColours(), with: dark, \.backgroundColor, \.tintColor, \.unselectedTintColor)
            }
            merged.extensions.merge(look.extensions) { $1 }
            result.appearance = merged
        }
        if let groups = overlay.groups {
            var merged = base.groups ?? []
            for group in groups {
                if let index = merged.firstIndex(where: { $0.id == group.id }) { merged[index] = group } else { merged.append(group) }
            }
            result.groups = merged
        }
        for (locale, table) in overlay.strings { result.strings[locale, default: [:]].merge(table) { $1 } }
        result.extensions.merge(overlay.extensions) { $1 }
        return result
    }
}

/// `base` with each of `members` that `overlay` sets taken from `overlay`: how an extending layout replaces single
/// members of the layout, more tab and appearance it extends, leaving the rest inherited.
func overlaying<Root, each Value>(_ base: Root, with overlay: Root, _ members: repeat WritableKeyPath<Root, (each Value)?>) -> Root {
    var result = base
    for member in repeat each members {
        if let value = overlay[keyPath: member] { result[keyPath: member] = value }
    }
    return result
}
