import Foundation

/// A compiled layout as the server sends it (docs/layout-format.md): what one client shows, already localized and
/// targeted. Keys this version does not know (`x-…` and newer ones) are kept in `extensions`.
///
/// Decode with ``CompiledLayout/decode(_:)``, which validates: a value of this type that came from the network
/// or the disk has tabs, unique ids, tags in order and an initial index that exists.
public struct CompiledLayout: Sendable, Hashable, Codable {
    /// The account whose layout this was compiled from (`default` for accounts without their own).
    public var layout: String
    /// The stored version of that layout, when the server has one.
    public var version: Int?
    /// The locale the titles are in.
    public var locale: String
    /// The tag of the tab selected at launch.
    public var initialIndex: Int
    /// The tabs on the bar, in order (More's tab not included: see ``more``).
    public var tabs: [Tab]
    /// The tabs that did not fit on the bar, shown behind a "More" tab; nil when all fit.
    public var more: More?
    public var appearance: Appearance
    public var extensions: [String: JSONValue]

    public init(
        layout: String, version: Int? = nil, locale: String, initialIndex: Int = 0, tabs: [Tab], more: More? = nil,
        appearance: Appearance = Appearance(), extensions: [String: JSONValue] = [:]
    ) {
        self.layout = layout
        self.version = version
        self.locale = locale
        self.initialIndex = initialIndex
        self.tabs = tabs
        self.more = more
        self.appearance = appearance
        self.extensions = extensions
    }

    /// Every tab the client gets, in tag order: the bar's, then those under More.
    public var allTabs: [Tab] { tabs + (more?.tabs ?? []) }

    /// The initially selected tab.
    public var initialTab: Tab? { allTabs.first { $0.tag == initialIndex } }

    /// One tab of the bar, of More, or a child in a tab's navigation list.
    public struct Tab: Sendable, Hashable, Codable {
        /// Stable identity, unique in the layout.
        public var id: String
        /// The index among the client's tabs (More's tabs continue the count); nil for children.
        public var tag: Int?
        /// The title, localized.
        public var title: String
        /// The localization key the title came from, when it was one.
        public var titleKey: String?
        /// An image asset or SF Symbol name.
        public var image: String?
        public var selectedImage: String?
        /// The class of the view controller (`HomeViewController`, `MyApp.HomeViewController`).
        public var rootViewController: String
        /// Wrap the root view controller in a navigation controller.
        public var navigation: Bool
        /// What tapping the selected tab again does.
        public var reselect: Reselect
        public var badge: String?
        /// Handed to the view controller when it starts.
        public var params: [String: JSONValue]?
        /// A navigation list under this tab.
        public var children: [Tab]?
        public var extensions: [String: JSONValue]

        public init(
            id: String, tag: Int?, title: String, titleKey: String? = nil, image: String? = nil,
            selectedImage: String? = nil, rootViewController: String, navigation: Bool = true,
            reselect: Reselect = .popToRoot, badge: String? = nil, params: [String: JSONValue]? = nil,
            children: [Tab]? = nil, extensions: [String: JSONValue] = [:]
        ) {
            self.id = id
            self.tag = tag
            self.title = title
            self.titleKey = titleKey
            self.image = image
            self.selectedImage = selectedImage
            self.rootViewController = rootViewController
            self.navigation = navigation
            self.reselect = reselect
            self.badge = badge
            self.params = params
            self.children = children
            self.extensions = extensions
        }
    }

    /// What tapping the selected tab again does: `popToRoot`, `none`, or a value a newer server knows.
    public struct Reselect: RawRepresentable, Sendable, Hashable, Codable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let popToRoot = Reselect(rawValue: "popToRoot")
        public static let none = Reselect(rawValue: "none")

        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }

    /// The "More" tab and the tabs behind it.
    public struct More: Sendable, Hashable, Codable {
        public var title: String
        public var titleKey: String?
        public var image: String?
        public var selectedImage: String?
        public var tabs: [Tab]
        public var extensions: [String: JSONValue]

        public init(
            title: String, titleKey: String? = nil, image: String? = nil, selectedImage: String? = nil, tabs: [Tab],
            extensions: [String: JSONValue] = [:]
        ) {
            self.title = title
            self.titleKey = titleKey
            self.image = image
            self.selectedImage = selectedImage
            self.tabs = tabs
            self.extensions = extensions
        }
    }

    /// How the bar looks.
    public struct Appearance: Sendable, Hashable, Codable {
        /// Points (30–120; 49 is UIKit's).
        public var height: Double
        /// `#RRGGBB` or `#RRGGBBAA`, upper case.
        public var backgroundColor: String?
        public var tintColor: String?
        public var unselectedTintColor: String?
        public var animator: Animator
        public var extensions: [String: JSONValue]

        public init(
            height: Double = 49, backgroundColor: String? = nil, tintColor: String? = nil, unselectedTintColor: String? = nil,
            animator: Animator = Animator(name: "none"), extensions: [String: JSONValue] = [:]
        ) {
            self.height = height
            self.backgroundColor = backgroundColor
            self.tintColor = tintColor
            self.unselectedTintColor = unselectedTintColor
            self.animator = animator
            self.extensions = extensions
        }
    }

    /// The selection animation: `none`, `underline`, `bounce`, `fade` or an `x-…` name, with its parameters.
    public struct Animator: Sendable, Hashable, Codable {
        public var name: String
        public var params: [String: JSONValue]?

        public init(name: String, params: [String: JSONValue]? = nil) {
            self.name = name
            self.params = params
        }
    }
}

// MARK: - Decoding and validation

extension CompiledLayout {
    /// Decodes a compiled layout and validates it.
    /// - Throws: ``TabClientError/invalidLayout(_:)`` naming every problem found.
    public static func decode(_ data: Data) throws(TabClientError) -> CompiledLayout {
        let layout: CompiledLayout
        do {
            layout = try JSONLimits.decode(CompiledLayout.self, from: data)
        } catch {
            throw .invalidLayout([LayoutProblem(pointer: "", message: describe(error))])
        }
        try layout.validate()
        return layout
    }

    /// Checks what a tab bar needs: tabs, unique non-empty ids, tags `0..<n` in order, an initial index among
    /// them, a height a bar can have, colours in `#RRGGBB(AA)`.
    /// - Throws: ``TabClientError/invalidLayout(_:)`` with all problems at once.
    public func validate() throws(TabClientError) {
        var problems: [LayoutProblem] = []
        if tabs.isEmpty { problems.append(.init(pointer: "/tabs", message: "a layout needs at least one tab on the bar")) }
        var seen: Set<String> = []
        func check(_ tab: Tab, at pointer: String, tag expected: Int?) {
            if tab.id.isEmpty { problems.append(.init(pointer: pointer + "/id", message: "the id is empty")) }
            if !seen.insert(tab.id).inserted {
                problems.append(.init(pointer: pointer + "/id", message: "the id '\(tab.id)' is used twice"))
            }
            if tab.tag != expected {
                let want = expected.map { "\($0)" } ?? "none (a child)"
                problems.append(
                    .init(pointer: pointer + "/tag", message: "the tag is \(tab.tag.map { "\($0)" } ?? "missing"), expected \(want)"))
            }
            if tab.rootViewController.isEmpty {
                problems.append(.init(pointer: pointer + "/rootViewController", message: "the view controller class is empty"))
            }
            for (index, child) in (tab.children ?? []).enumerated() {
                check(child, at: "\(pointer)/children/\(index)", tag: nil)
            }
        }
        for (index, tab) in tabs.enumerated() { check(tab, at: "/tabs/\(index)", tag: index) }
        if let more {
            if more.tabs.isEmpty { problems.append(.init(pointer: "/more/tabs", message: "More has no tabs")) }
            for (index, tab) in more.tabs.enumerated() { check(tab, at: "/more/tabs/\(index)", tag: tabs.count + index) }
        }
        let count = tabs.count + (more?.tabs.count ?? 0)
        if !(0..<max(count, 1)).contains(initialIndex) {
            problems.append(.init(pointer: "/initialIndex", message: "\(initialIndex) is not the tag of a tab (\(count) tabs)"))
        }
        if !appearance.height.isFinite || !(30...120).contains(appearance.height) {
            problems.append(.init(pointer: "/appearance/height", message: "\(appearance.height) is not a height of 30 to 120 points"))
        }
        let colours = [
            ("backgroundColor", appearance.backgroundColor), ("tintColor", appearance.tintColor),
            ("unselectedTintColor", appearance.unselectedTintColor),
        ]
        for case (let name, let colour?) in colours where !Self.isColour(colour) {
            problems.append(.init(pointer: "/appearance/\(name)", message: "'\(colour)' is not #RRGGBB or #RRGGBBAA"))
        }
        if !problems.isEmpty { throw .invalidLayout(problems) }
    }

    static func isColour(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.first == UInt8(ascii: "#"), utf8.count == 7 || utf8.count == 9 else { return false }
        return utf8.dropFirst().allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
    }

    static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            return "\(pointer(context.codingPath + [key])): required key is missing"
        case .typeMismatch(let type, let context)?:
            return "\(pointer(context.codingPath)): expected \(type)"
        case .valueNotFound(let type, let context)?:
            return "\(pointer(context.codingPath)): expected \(type), found null"
        case .dataCorrupted(let context)?:
            return context.codingPath.isEmpty ? "not JSON" : "\(pointer(context.codingPath)): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private static func pointer(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "/" : path.map { "/" + ($0.intValue.map(String.init) ?? $0.stringValue) }.joined()
    }
}

/// One thing wrong with a layout: the JSON Pointer of the value and what is wrong with it.
public struct LayoutProblem: Sendable, Hashable, CustomStringConvertible {
    public var pointer: String
    public var message: String
    public init(pointer: String, message: String) {
        self.pointer = pointer
        self.message = message
    }
    public var description: String { pointer.isEmpty ? message : "\(pointer): \(message)" }
}

// MARK: - Codable with unknown keys kept

extension CompiledLayout {
    private static let known: Set<String> = ["layout", "version", "locale", "initialIndex", "tabs", "more", "appearance"]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        layout = try c.decode(String.self, forKey: .init("layout"))
        version = try c.decodeIfPresent(Int.self, forKey: .init("version"))
        locale = try c.decode(String.self, forKey: .init("locale"))
        initialIndex = try c.decodeIfPresent(Int.self, forKey: .init("initialIndex")) ?? 0
        tabs = try c.decode([Tab].self, forKey: .init("tabs"))
        more = try c.decodeIfPresent(More.self, forKey: .init("more"))
        appearance = try c.decode(Appearance.self, forKey: .init("appearance"))
        extensions = try c.unknownKeys(besides: Self.known)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(layout, forKey: .init("layout"))
        try c.encodeIfPresent(version, forKey: .init("version"))
        try c.encode(locale, forKey: .init("locale"))
        try c.encode(initialIndex, forKey: .init("initialIndex"))
        try c.encode(tabs, forKey: .init("tabs"))
        try c.encodeIfPresent(more, forKey: .init("more"))
        try c.encode(appearance, forKey: .init("appearance"))
        try c.encodeUnknownKeys(extensions)
    }
}

extension CompiledLayout.Tab {
    private static let known: Set<String> = [
        "id", "tag", "title", "titleKey", "image", "selectedImage", "rootViewController", "navigation", "reselect", "badge",
        "params", "children",
    ]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        id = try c.decode(String.self, forKey: .init("id"))
        tag = try c.decodeIfPresent(Int.self, forKey: .init("tag"))
        title = try c.decode(String.self, forKey: .init("title"))
        titleKey = try c.decodeIfPresent(String.self, forKey: .init("titleKey"))
        image = try c.decodeIfPresent(String.self, forKey: .init("image"))
        selectedImage = try c.decodeIfPresent(String.self, forKey: .init("selectedImage"))
        rootViewController = try c.decode(String.self, forKey: .init("rootViewController"))
        navigation = try c.decodeIfPresent(Bool.self, forKey: .init("navigation")) ?? true
        reselect = try c.decodeIfPresent(CompiledLayout.Reselect.self, forKey: .init("reselect")) ?? .popToRoot
        badge = try c.decodeIfPresent(String.self, forKey: .init("badge"))
        params = try c.decodeIfPresent([String: JSONValue].self, forKey: .init("params"))
        children = try c.decodeIfPresent([CompiledLayout.Tab].self, forKey: .init("children"))
        extensions = try c.unknownKeys(besides: Self.known)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(id, forKey: .init("id"))
        try c.encodeIfPresent(tag, forKey: .init("tag"))
        try c.encode(title, forKey: .init("title"))
        try c.encodeIfPresent(titleKey, forKey: .init("titleKey"))
        try c.encodeIfPresent(image, forKey: .init("image"))
        try c.encodeIfPresent(selectedImage, forKey: .init("selectedImage"))
        try c.encode(rootViewController, forKey: .init("rootViewController"))
        try c.encode(navigation, forKey: .init("navigation"))
        try c.encode(reselect, forKey: .init("reselect"))
        try c.encodeIfPresent(badge, forKey: .init("badge"))
        try c.encodeIfPresent(params, forKey: .init("params"))
        try c.encodeIfPresent(children, forKey: .init("children"))
        try c.encodeUnknownKeys(extensions)
    }
}

extension CompiledLayout.More {
    private static let known: Set<String> = ["title", "titleKey", "image", "selectedImage", "tabs"]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        title = try c.decode(String.self, forKey: .init("title"))
        titleKey = try c.decodeIfPresent(String.self, forKey: .init("titleKey"))
        image = try c.decodeIfPresent(String.self, forKey: .init("image"))
        selectedImage = try c.decodeIfPresent(String.self, forKey: .init("selectedImage"))
        tabs = try c.decode([CompiledLayout.Tab].self, forKey: .init("tabs"))
        extensions = try c.unknownKeys(besides: Self.known)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(title, forKey: .init("title"))
        try c.encodeIfPresent(titleKey, forKey: .init("titleKey"))
        try c.encodeIfPresent(image, forKey: .init("image"))
        try c.encodeIfPresent(selectedImage, forKey: .init("selectedImage"))
        try c.encode(tabs, forKey: .init("tabs"))
        try c.encodeUnknownKeys(extensions)
    }
}

extension CompiledLayout.Appearance {
    private static let known: Set<String> = ["height", "backgroundColor", "tintColor", "unselectedTintColor", "animator"]

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        height = try c.decodeIfPresent(Double.self, forKey: .init("height")) ?? 49
        backgroundColor = try c.decodeIfPresent(String.self, forKey: .init("backgroundColor"))
        tintColor = try c.decodeIfPresent(String.self, forKey: .init("tintColor"))
        unselectedTintColor = try c.decodeIfPresent(String.self, forKey: .init("unselectedTintColor"))
        animator = try c.decodeIfPresent(CompiledLayout.Animator.self, forKey: .init("animator")) ?? .init(name: "none")
        extensions = try c.unknownKeys(besides: Self.known)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode(height, forKey: .init("height"))
        try c.encodeIfPresent(backgroundColor, forKey: .init("backgroundColor"))
        try c.encodeIfPresent(tintColor, forKey: .init("tintColor"))
        try c.encodeIfPresent(unselectedTintColor, forKey: .init("unselectedTintColor"))
        try c.encode(animator, forKey: .init("animator"))
        try c.encodeUnknownKeys(extensions)
    }
}
