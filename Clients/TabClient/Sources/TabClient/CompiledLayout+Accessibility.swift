import Foundation

// The layout fields of tab bars as phones draw them now (docs/layout-format.md): dark mode, accessibility, the search role and
// the sidebar's groups. Older clients keep them among the unknown keys (`extensions`); these read them from there, so
// that a layout is decoded, stored and encoded again exactly as before.

extension CompiledLayout {
    /// The colour scheme the device is in.
    public enum ColorScheme: Sendable, Hashable {
        case light
        case dark
    }

    /// The bar's colours for one scheme (upper-case `#RRGGBB`/`#RRGGBBAA`, or nil: the platform's).
    public struct Colors: Sendable, Hashable {
        public var backgroundColor: String?
        public var tintColor: String?
        public var unselectedTintColor: String?

        public init(backgroundColor: String? = nil, tintColor: String? = nil, unselectedTintColor: String? = nil) {
            self.backgroundColor = backgroundColor
            self.tintColor = tintColor
            self.unselectedTintColor = unselectedTintColor
        }
    }

    /// A section of the sidebar iPad, Mac and Vision apps show (`UITabGroup`): its title and the ids of its tabs. Phones
    /// ignore it.
    public struct Group: Sendable, Hashable {
        public var id: String
        public var title: String
        public var tabs: [String]
    }

    /// The layout's `groups`, in order (empty when it has none).
    public var groups: [Group] {
        guard case .array(let items)? = extensions["groups"] else { return [] }
        return items.compactMap { item in
            guard case .object(let group) = item, let id = group["id"]?.stringValue else { return nil }
            let tabs: [String]
            if case .array(let ids)? = group["tabs"] { tabs = ids.compactMap(\.stringValue) } else { tabs = [] }
            return Group(id: id, title: group["title"]?.stringValue ?? "", tabs: tabs)
        }
    }
}

extension CompiledLayout.Appearance {
    /// The colours used in dark mode as written (`appearance.dark`), or nil when the layout says none.
    public var dark: CompiledLayout.Colors? {
        guard case .object(let dark)? = extensions["dark"] else { return nil }
        return CompiledLayout.Colors(
            backgroundColor: dark["backgroundColor"]?.stringValue, tintColor: dark["tintColor"]?.stringValue,
            unselectedTintColor: dark["unselectedTintColor"]?.stringValue)
    }

    /// The colours for `scheme`: in dark mode `dark`'s, a colour it leaves out keeping its light value.
    public func colors(for scheme: CompiledLayout.ColorScheme) -> CompiledLayout.Colors {
        let light = CompiledLayout.Colors(backgroundColor: backgroundColor, tintColor: tintColor, unselectedTintColor: unselectedTintColor)
        guard scheme == .dark, let dark else { return light }
        return CompiledLayout.Colors(
            backgroundColor: dark.backgroundColor ?? light.backgroundColor, tintColor: dark.tintColor ?? light.tintColor,
            unselectedTintColor: dark.unselectedTintColor ?? light.unselectedTintColor)
    }
}

extension CompiledLayout.Tab {
    /// What VoiceOver reads for the tab (localized), or nil: its title.
    public var accessibilityLabel: String? { extensions["accessibilityLabel"]?.stringValue }
    /// The key the label came from, when one was used.
    public var accessibilityLabelKey: String? { extensions["accessibilityLabelKey"]?.stringValue }
    /// VoiceOver's hint for the tab (localized), or nil.
    public var accessibilityHint: String? { extensions["accessibilityHint"]?.stringValue }
    public var accessibilityHintKey: String? { extensions["accessibilityHintKey"]?.stringValue }
    /// `search` for the layout's search tab (iOS 18's `UISearchTab`), else nil.
    public var role: String? { extensions["role"]?.stringValue }
}

extension CompiledLayout.More {
    /// What VoiceOver reads for More, or nil: its title.
    public var accessibilityLabel: String? { extensions["accessibilityLabel"]?.stringValue }
    public var accessibilityHint: String? { extensions["accessibilityHint"]?.stringValue }
}
