import TabLayout

/// Why a compiled layout could not be drawn as asked.
public enum TabPreviewError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `selected` names no tab the bar shows (neither a visible tab nor one behind More).
    case unknownTab(String, known: [String])
    /// The width is outside ``TabPreview/widths``.
    case widthOutOfRange(Int)
    /// The document is not a compiled layout (docs/layout-format.md): the member at this pointer is missing or wrong.
    case notACompiledLayout(pointer: String)

    public var description: String {
        switch self {
        case .unknownTab(let id, let known):
            "no tab '\(id)' in the bar; the tabs are: \(known.isEmpty ? "(none)" : known.joined(separator: ", "))"
        case .widthOutOfRange(let width):
            "a width of \(width) points; from \(TabPreview.widths.lowerBound) to \(TabPreview.widths.upperBound)"
        case .notACompiledLayout(let pointer):
            "not a compiled layout: '\(pointer)' is missing or of the wrong kind"
        }
    }
}

/// The colours a picture is drawn in: the layout's light ones, or `appearance.dark` over them.
public enum ColourScheme: String, Sendable, CaseIterable, Hashable {
    case light, dark
}

/// Draws a compiled layout (docs/layout-format.md) as the tab bar a phone shows, in SVG 1.1.
///
/// The picture is the bar alone, `width` points wide and `appearance.height` high: its background colour, a
/// hairline on top, and one item per visible tab, plus "More" when tabs overflow. The selected item is drawn in
/// `tintColor`, the others in `unselectedTintColor`. An icon is a neutral rounded square holding the image's
/// name (SF Symbols and the app's assets cannot be drawn here); a badge is the red pill UIKit draws. Titles
/// longer than an item fits are cut with "…" (the whole title is the item's `<title>`). The search tab (`role`
/// `search`) is drawn apart, a round item at the bar's trailing end, as iOS 18 and Android draw it. In the dark
/// scheme the colours are `appearance.dark`'s, each one it leaves out the light one (UIKit's dark defaults where the
/// layout names neither). For an iPad, a layout with `groups` is drawn with its sidebar: each group's title over its
/// tabs' titles, left of the bar.
///
/// The same document, selection and width always give the same bytes: numbers have at most two decimals,
/// attributes a fixed order, and nothing depends on the clock or the machine.
public enum TabPreview {
    /// The widths a preview can have, in points (a small phone to a large tablet in landscape).
    public static let widths = 200...2048
    /// The default width: an iPhone 15's, in points.
    public static let defaultWidth = 390

    /// UIKit's look where the layout says nothing.
    static let defaultBackground = "#F7F7F7"
    static let defaultTint = "#007AFF"
    static let defaultUnselected = "#999999"
    static let badgeColour = "#FF3B30"
    /// UIKit's dark look where the layout says nothing.
    static let defaultDarkBackground = "#121212"
    static let defaultDarkTint = "#0A84FF"
    static let defaultDarkUnselected = "#8E8E93"

    /// The SVG of `layout` with `selected` (a tab id; nil: the initial tab) shown as selected.
    /// - Parameters:
    ///   - scheme: light, or dark (`appearance.dark` over the light colours).
    ///   - platform: the client the layout was compiled for; an iPad's picture has the groups' sidebar.
    /// - Throws: ``TabPreviewError`` for an unknown `selected` or a width outside ``widths``.
    public static func svg(
        _ layout: CompiledLayout, selected: String? = nil, width: Int = defaultWidth, scheme: ColourScheme = .light,
        platform: Platform? = nil
    ) throws(TabPreviewError) -> [UInt8] {
        try svg(document: layout.document, selected: selected, width: width, scheme: scheme, platform: platform)
    }

    /// The SVG of a compiled layout's JSON document (as `…/tabs` serves it).
    /// - Throws: ``TabPreviewError`` for an unknown `selected`, a width outside ``widths``, or a document that is no
    ///   compiled layout.
    public static func svg(
        document: JSONValue, selected: String? = nil, width: Int = defaultWidth, scheme: ColourScheme = .light,
        platform: Platform? = nil
    ) throws(TabPreviewError) -> [UInt8] {
        guard widths.contains(width) else { throw .widthOutOfRange(width) }
        let bar = try TabBarModel(document, selected: selected, scheme: scheme, sidebar: platform == .ipad)
        return SVGDrawing(bar: bar, width: Double(width)).bytes()
    }
}

// MARK: - What is drawn

/// One item of the bar.
struct BarItem: Equatable {
    /// The tab's id; nil for More.
    var id: String?
    var title: String
    var image: String?
    var selectedImage: String?
    var badge: String?
    /// The search tab, drawn apart at the trailing end.
    var isSearch = false
}

/// A sidebar section: its title and its tabs' titles.
struct SidebarGroup: Equatable {
    var id: String
    var title: String
    var tabs: [String]
}

/// The bar's content, read out of a compiled document.
struct TabBarModel: Equatable {
    var layout: String
    var version: Int64?
    var locale: String
    var height: Double
    /// The bar's fill, the selected item's colour, and the other items'.
    var background, tint, unselected: Paint
    var animator: String
    var items: [BarItem]
    var selectedIndex: Int?
    var scheme: ColourScheme = .light
    /// The sidebar's groups (empty: no sidebar is drawn).
    var sidebar: [SidebarGroup] = []

    /// The search item's index, when a visible tab is the search tab.
    var searchIndex: Int? { items.firstIndex { $0.isSearch } }

    init(_ document: JSONValue, selected: String?, scheme: ColourScheme = .light, sidebar drawsSidebar: Bool = false)
        throws(TabPreviewError)
    {
        self.scheme = scheme
        guard case .object(let root) = document else { throw .notACompiledLayout(pointer: "") }
        layout = root.string("layout") ?? ""
        if case .integer(let v)? = root["version"] { version = v }
        locale = root.string("locale") ?? ""
        let appearance = root.object("appearance") ?? [:]
        switch appearance["height"] {
        case .integer(let h)?: height = Double(h)
        case .real(let h)?: height = h
        case nil: height = 49
        default: throw .notACompiledLayout(pointer: "/appearance/height")
        }
        let dark = scheme == .dark ? appearance.object("dark") ?? [:] : [:]
        func paint(_ key: String, _ light: String, _ darkDefault: String) throws(TabPreviewError) -> Paint {
            if let colour = dark.string(key) {
                guard let paint = Paint(colour) else { throw .notACompiledLayout(pointer: "/appearance/dark/" + key) }
                return paint
            }
            let fallback = scheme == .dark ? darkDefault : light
            guard let paint = Paint(appearance.string(key) ?? fallback) else { throw .notACompiledLayout(pointer: "/appearance/" + key) }
            return paint
        }
        background = try paint("backgroundColor", TabPreview.defaultBackground, TabPreview.defaultDarkBackground)
        tint = try paint("tintColor", TabPreview.defaultTint, TabPreview.defaultDarkTint)
        unselected = try paint("unselectedTintColor", TabPreview.defaultUnselected, TabPreview.defaultDarkUnselected)
        animator = appearance.object("animator")?.string("name") ?? "none"

        guard case .array(let tabs)? = root["tabs"] else { throw .notACompiledLayout(pointer: "/tabs") }
        var items: [BarItem] = []
        for (i, tab) in tabs.enumerated() {
            guard case .object(let tab) = tab, let id = tab.string("id") else { throw .notACompiledLayout(pointer: "/tabs/\(i)") }
            items.append(
                BarItem(
                    id: id, title: tab.string("title") ?? id, image: tab.string("image"), selectedImage: tab.string("selectedImage"),
                    badge: tab.string("badge"), isSearch: tab.string("role") == "search"))
        }
        var hidden: [String] = []
        if let more = root.object("more") {
            if case .array(let tabs)? = more["tabs"] {
                hidden = tabs.compactMap { tab in if case .object(let tab) = tab { tab.string("id") } else { nil } }
            }
            items.append(
                BarItem(
                    id: nil, title: more.string("title") ?? "More", image: more.string("image"), selectedImage: more.string("selectedImage")
                ))
        }
        let visible = items.compactMap(\.id)
        if let selected {
            if let index = visible.firstIndex(of: selected) {
                selectedIndex = index
            } else if hidden.contains(selected) {
                selectedIndex = items.count - 1
            } else {
                throw .unknownTab(selected, known: visible + hidden)
            }
        } else if !items.isEmpty {
            // initialIndex counts every tab the client gets, those behind More too.
            var initial = 0
            if case .integer(let n)? = root["initialIndex"] { initial = Int(clamping: n) }
            selectedIndex = initial >= 0 && initial < visible.count ? initial : (hidden.isEmpty ? 0 : items.count - 1)
        }
        self.items = items
        if drawsSidebar, case .array(let groups)? = root["groups"] {
            var titles: [String: String] = [:]
            for tab in tabs { if case .object(let tab) = tab, let id = tab.string("id") { titles[id] = tab.string("title") ?? id } }
            if let more = root.object("more"), case .array(let hidden)? = more["tabs"] {
                for tab in hidden { if case .object(let tab) = tab, let id = tab.string("id") { titles[id] = tab.string("title") ?? id } }
            }
            for (i, group) in groups.enumerated() {
                guard case .object(let group) = group, let id = group.string("id"), case .array(let members)? = group["tabs"] else {
                    throw .notACompiledLayout(pointer: "/groups/\(i)")
                }
                let names = members.compactMap { member -> String? in
                    if case .string(let id) = member { titles[id] ?? id } else { nil }
                }
                sidebar.append(SidebarGroup(id: id, title: group.string("title") ?? id, tabs: names))
            }
        }
    }
}

/// A colour as SVG 1.1 takes it: `#RRGGBB`, and the alpha of `#RRGGBBAA` as a separate opacity (SVG 1.1 has no
/// eight-digit colours).
struct Paint: Equatable {
    var rgb: String
    /// 0–255; nil for opaque.
    var alpha: Int?

    init?(_ text: String) {
        let digits = Array(text.utf8.dropFirst())
        guard text.hasPrefix("#"), digits.count == 6 || digits.count == 8,
            digits.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x46).contains($0 & 0xDF) })
        else { return nil }
        rgb = "#" + String(decoding: digits.prefix(6), as: UTF8.self).uppercased()
        alpha = digits.count == 8 ? Int(String(decoding: digits.suffix(2), as: UTF8.self), radix: 16) : nil
    }
}

extension [String: JSONValue] {
    fileprivate func string(_ key: String) -> String? {
        if case .string(let s)? = self[key] { s } else { nil }
    }

    fileprivate func object(_ key: String) -> [String: JSONValue]? {
        if case .object(let o)? = self[key] { o } else { nil }
    }
}
