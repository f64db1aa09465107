/// Who is asking: the inputs that choose one compiled variant of a layout.
public struct ClientContext: Sendable, Hashable {
    /// The locale chosen for this client (see ``LocaleMatcher``).
    public var locale: String
    /// nil: the client did not say, and gets every tab.
    public var platform: Platform?
    /// nil: the client did not say, and gets every tab.
    public var appVersion: AppVersion?

    public init(locale: String, platform: Platform? = nil, appVersion: AppVersion? = nil) {
        self.locale = locale
        self.platform = platform
        self.appVersion = appVersion
    }
}

/// One client's layout: the canonical document and seed 000's legacy array.
public struct CompiledLayout: Sendable, Equatable {
    /// The compiled document (docs/layout-format.md, "Compiled layout").
    public var document: JSONValue
    /// Every tab the client gets, in order (those under More too), as in the document.
    let tabs: [[String: JSONValue]]

    /// `ApplicationHierarchy.plist`'s array: every tab the client gets, in order, without children. Built on
    /// demand: most variants are never asked for in this shape.
    public var legacy: JSONValue {
        .array(
            tabs.map { tab in
                var entry: [String: JSONValue] = Dictionary(minimumCapacity: 5)
                entry["TabBarTitle"] = tab["title"]
                entry["TabBarImage"] = tab["image"]
                entry["TabBarSelectedImage"] = tab["selectedImage"]
                entry["TabBarBadge"] = tab["badge"]
                entry["RootViewController"] = tab["rootViewController"]
                // Only where a label is set: seed 000's own layout keeps its bytes.
                entry["TabBarAccessibilityLabel"] = tab["accessibilityLabel"]
                return .object(entry)
            })
    }
}

/// Compiles a resolved layout for one client: targeting, localization, defaults, More overflow, tags.
public enum LayoutCompiler {
    /// The most items Android's `BottomNavigationView` holds (it throws above): android clients never get more.
    public static let androidBarItems = 5

    /// The bar's item limit (More included) for `platform`: the layout's `maxVisibleTabs`, and for android at most
    /// ``androidBarItems``; nil when every tab is visible.
    public static func barLimit(_ layout: ResolvedLayout, platform: Platform?) -> Int? {
        guard platform == .android else { return layout.maxVisibleTabs }
        return min(layout.maxVisibleTabs ?? androidBarItems, androidBarItems)
    }

    /// Whether a client's platform can change what `layout` compiles to: a tab targeted by platform, or more tabs
    /// than android's bar holds.
    public static func dependsOnPlatform(_ layout: ResolvedLayout) -> Bool {
        func targets(_ tabs: [TabSpec]) -> Bool { tabs.contains { $0.platforms != nil || targets($0.children) } }
        return targets(layout.tabs) || layout.tabs.count > androidBarItems
    }

    /// - Parameter globalStrings: locale → table, the global tables (a layout's own strings win).
    public static func compile(
        _ layout: ResolvedLayout, for client: ClientContext, globalStrings: [String: StringsTable]
    ) -> CompiledLayout {
        let localizer = Localizer(layout: layout, locale: client.locale, global: globalStrings)
        let admitted = admittedTabs(layout.tabs, client)
        let outputs = admitted.enumerated().map { tag, tab in tabValue(tab, tag: tag, localizer: localizer, client: client) }

        var document: [String: JSONValue] = layout.extensions
        document.reserveCapacity(layout.extensions.count + 8)
        var visible = outputs
        if let limit = barLimit(layout, platform: client.platform), outputs.count > limit {
            visible = Array(outputs[..<(limit - 1)])
            var more: [String: JSONValue] = layout.moreTab?.extensions ?? [:]
            let (title, key) = localizer.localize(layout.moreTab?.title ?? "More")
            more["title"] = .string(title)
            if let key { more["titleKey"] = .string(key) }
            localized(layout.moreTab?.accessibilityLabel, "accessibilityLabel", into: &more, localizer)
            localized(layout.moreTab?.accessibilityHint, "accessibilityHint", into: &more, localizer)
            if let image = layout.moreTab?.image { more["image"] = .string(image) }
            if let image = layout.moreTab?.selectedImage { more["selectedImage"] = .string(image) }
            more["tabs"] = .array(outputs[(limit - 1)...].map { .object($0) })
            document["more"] = .object(more)
        }
        document["tabs"] = .array(visible.map { .object($0) })
        document["initialIndex"] = .integer(Int64(initialIndex(layout, admitted)))
        document["locale"] = .string(client.locale)
        document["layout"] = .string(layout.name)
        if let version = layout.version { document["version"] = .integer(Int64(version)) }
        document["appearance"] = appearanceValue(layout.appearance)
        let groups = groupValues(layout.groups, admitted: admitted, localizer: localizer)
        if !groups.isEmpty { document["groups"] = .array(groups) }
        return CompiledLayout(document: .object(document), tabs: outputs)
    }

    /// Whether `client` gets `tab` by its targeting (`platforms`, `minAppVersion`, `maxAppVersion`).
    public static func admits(_ tab: TabSpec, _ client: ClientContext) -> Bool {
        if let platform = client.platform, let platforms = tab.platforms, !platforms.contains(platform) { return false }
        if let version = client.appVersion {
            if let min = tab.minAppVersion, version < min { return false }
            if let max = tab.maxAppVersion, version > max { return false }
        }
        return true
    }

    private static func admittedTabs(_ tabs: [TabSpec], _ client: ClientContext) -> [TabSpec] {
        tabs.filter { admits($0, client) }
    }

    /// One tab's object; `tag` is its position among the client's top-level tabs (children have none).
    private static func tabValue(_ tab: TabSpec, tag: Int?, localizer: Localizer, client: ClientContext) -> [String: JSONValue] {
        var value: [String: JSONValue] = tab.extensions
        value.reserveCapacity(tab.extensions.count + 18)  // every key below, so the table never grows
        value["id"] = .string(tab.id)
        if let tag { value["tag"] = .integer(Int64(tag)) }
        let (title, key) = localizer.localize(tab.title)
        value["title"] = .string(title)
        if let key { value["titleKey"] = .string(key) }
        localized(tab.accessibilityLabel, "accessibilityLabel", into: &value, localizer)
        localized(tab.accessibilityHint, "accessibilityHint", into: &value, localizer)
        if let role = tab.role { value["role"] = .string(role.rawValue) }
        if let image = tab.image { value["image"] = .string(image) }
        if let image = tab.selectedImage { value["selectedImage"] = .string(image) }
        value["rootViewController"] = .string(tab.rootViewController)
        value["navigation"] = .bool(tab.navigation ?? true)
        value["reselect"] = .string(tab.reselect ?? "popToRoot")
        if let badge = tab.badge { value["badge"] = .string(badge) }
        if let params = tab.params { value["params"] = .object(params) }
        let children = admittedTabs(tab.children, client)
        if !children.isEmpty {
            value["children"] = .array(children.map { .object(tabValue($0, tag: nil, localizer: localizer, client: client)) })
        }
        return value
    }

    /// `name` localized (and `nameKey` when the text was a key), when the source gave one.
    private static func localized(_ text: String?, _ name: String, into value: inout [String: JSONValue], _ localizer: Localizer) {
        guard let text else { return }
        let (localized, key) = localizer.localize(text)
        value[name] = .string(localized)
        if let key { value[name + "Key"] = .string(key) }
    }

    /// The groups with the tabs this client gets, in the groups' order; a group left with none is dropped.
    private static func groupValues(_ groups: [TabGroup], admitted: [TabSpec], localizer: Localizer) -> [JSONValue] {
        guard !groups.isEmpty else { return [] }
        let ids = Set(admitted.map(\.id))
        return groups.compactMap { group in
            let tabs = group.tabs.filter { ids.contains($0) }
            guard !tabs.isEmpty else { return nil }
            var value: [String: JSONValue] = ["id": .string(group.id), "tabs": .array(tabs.map { .string($0) })]
            let (title, key) = localizer.localize(group.title)
            value["title"] = .string(title)
            if let key { value["titleKey"] = .string(key) }
            return .object(value)
        }
    }

    /// The tag of the initial tab among the tabs this client gets; 0 when it does not get that tab.
    private static func initialIndex(_ layout: ResolvedLayout, _ admitted: [TabSpec]) -> Int {
        let id: String?
        switch layout.initialTab {
        case .id(let name): id = name
        case .index(let index): id = index < layout.tabs.count ? layout.tabs[index].id : nil
        case nil: id = nil
        }
        guard let id else { return 0 }
        return admitted.firstIndex { $0.id == id } ?? 0
    }

    private static func appearanceValue(_ appearance: Appearance) -> JSONValue {
        var value: [String: JSONValue] = appearance.extensions
        value["height"] = appearance.height ?? .integer(49)
        if let colour = appearance.backgroundColor { value["backgroundColor"] = .string(colour) }
        if let colour = appearance.tintColor { value["tintColor"] = .string(colour) }
        if let colour = appearance.unselectedTintColor { value["unselectedTintColor"] = .string(colour) }
        if let dark = appearance.dark {
            var colours: [String: JSONValue] = [:]
            if let colour = dark.backgroundColor { colours["backgroundColor"] = .string(colour) }
            if let colour = dark.tintColor { colours["tintColor"] = .string(colour) }
            if let colour = dark.unselectedTintColor { colours["unselectedTintColor"] = .string(colour) }
            value["dark"] = .object(colours)
        }
        var animator: [String: JSONValue] = ["name": .string(appearance.animator?.name ?? "none")]
        if let params = appearance.animator?.params { animator["params"] = .object(params) }
        value["animator"] = .object(animator)
        return .object(value)
    }
}

/// Title lookup for one locale: for the exact locale, then its language, then the default locale, the
/// layout's own table first and then the global one. A title that is no key stays as it is.
struct Localizer {
    let tables: [[String: String]]

    init(layout: ResolvedLayout, locale: String, global: [String: StringsTable]) {
        var chain = [locale]
        let language = LocaleMatcher.language(of: locale)
        if language != locale { chain.append(language) }
        if !chain.contains(layout.defaultLocale) { chain.append(layout.defaultLocale) }
        let defaultLanguage = LocaleMatcher.language(of: layout.defaultLocale)
        if !chain.contains(defaultLanguage) { chain.append(defaultLanguage) }
        var tables: [[String: String]] = []
        for candidate in chain {
            if let own = layout.strings[candidate] { tables.append(own) }
            if let shared = global[candidate] { tables.append(shared.entries) }
        }
        self.tables = tables
    }

    /// The text for `title`, and the key when `title` was one.
    func localize(_ title: String) -> (text: String, key: String?) {
        for table in tables {
            if let text = table[title] { return (text, title) }
        }
        return (title, nil)
    }
}

/// Chooses the locale of a response among the locales a layout has tables for.
public enum LocaleMatcher {
    /// `fr-CA` → `fr`; `zh_Hant_TW` → `zh`.
    public static func language(of locale: String) -> String {
        String(locale.prefix { $0 != "-" && $0 != "_" })
    }

    /// `tag` itself among `available` (case-insensitively, `-` and `_` alike), else its shorter prefixes.
    public static func match(_ tag: String, _ available: [String]) -> String? {
        var candidate = normalized(tag)
        while !candidate.isEmpty {
            if let hit = available.first(where: { normalized($0) == candidate }) { return hit }
            guard let cut = candidate.lastIndex(of: "-") else { break }
            candidate = String(candidate[..<cut])
        }
        return nil
    }

    static func normalized(_ tag: String) -> String { tag.lowercased().replacingOccurrences("_", "-") }
}
