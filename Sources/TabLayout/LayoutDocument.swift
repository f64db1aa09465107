// The compiled output (and pass-through `params` and `x-` keys) is made of TabJSON's values, written by its
// ``CanonicalJSON``; clients of TabLayout (the fuzz targets, the service) see them through this module.
@_exported import TabJSON

/// The clients a tab can be limited to.
public enum Platform: String, Sendable, CaseIterable, Hashable {
    case iphone, ipad, mac, tv, vision, android
}

/// A dotted app version (`2.10.1`), compared numerically component by component (missing ones are 0).
public struct AppVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let components: [UInt32]

    /// Parses `1`, `2.0`, `2.10.3`: one to four numbers of at most nine digits, separated by dots.
    public init?(_ text: some StringProtocol) {
        var components: [UInt32] = []
        components.reserveCapacity(4)
        var current: UInt32 = 0
        var digits = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "."):
                guard digits > 0, components.count < 3 else { return nil }
                components.append(current)
                current = 0
                digits = 0
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard digits < 9 else { return nil }
                current = current * 10 + UInt32(byte - UInt8(ascii: "0"))
                digits += 1
            default:
                return nil
            }
        }
        guard digits > 0 else { return nil }
        components.append(current)
        while components.count > 1, components.last == 0 { components.removeLast() }
        self.components = components
    }

    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        for i in 0..<max(lhs.components.count, rhs.components.count) {
            let l = i < lhs.components.count ? lhs.components[i] : 0
            let r = i < rhs.components.count ? rhs.components[i] : 0
            if l != r { return l < r }
        }
        return false
    }

    public var description: String { components.map(String.init).joined(separator: ".") }
}

/// One tab of a source, validated.
public struct TabSpec: Sendable, Equatable {
    public var id: String
    public var title: String
    public var image: String?
    public var selectedImage: String?
    public var rootViewController: String
    public var navigation: Bool?
    public var reselect: String?
    public var badge: String?
    public var params: [String: JSONValue]?
    public var platforms: Set<Platform>?
    public var minAppVersion: AppVersion?
    public var maxAppVersion: AppVersion?
    public var children: [TabSpec]
    /// `x-…` keys, passed through.
    public var extensions: [String: JSONValue]
    /// What VoiceOver and TalkBack read (a localization key or text, localized like `title`).
    public var accessibilityLabel: String? = nil
    /// What VoiceOver and TalkBack add after the label (a localization key or text).
    public var accessibilityHint: String? = nil
    /// The tab's part in the bar: ``TabRole/search`` (UIKit's `UISearchTab`) or none.
    public var role: TabRole? = nil
}

/// What a tab is besides a destination.
public enum TabRole: String, Sendable, CaseIterable, Hashable {
    /// The search tab: drawn apart, at the trailing end of the bar (at most one per layout).
    case search
}

/// A sidebar section (UIKit's `UITabGroup`, Android's navigation-rail section): a title over some tabs by id.
public struct TabGroup: Sendable, Equatable {
    public var id: String
    /// A localization key or text.
    public var title: String
    /// Ids of top-level tabs, each in at most one group.
    public var tabs: [String]
}

/// The colours used while the device is in dark mode; a colour left out keeps its light value.
public struct DarkColours: Sendable, Equatable {
    public var backgroundColor: String?
    public var tintColor: String?
    public var unselectedTintColor: String?

    public init(backgroundColor: String? = nil, tintColor: String? = nil, unselectedTintColor: String? = nil) {
        self.backgroundColor = backgroundColor
        self.tintColor = tintColor
        self.unselectedTintColor = unselectedTintColor
    }
}

/// The animator of the bar (seed 003).
public struct Animator: Sendable, Equatable {
    public var name: String
    public var params: [String: JSONValue]?
}

/// The bar's look (seeds 001 and 003). Absent members take their defaults at compile time.
public struct Appearance: Sendable, Equatable {
    public var height: JSONValue?
    public var backgroundColor: String?
    public var tintColor: String?
    public var unselectedTintColor: String?
    public var animator: Animator?
    public var extensions: [String: JSONValue] = [:]
    /// `appearance.dark`, as written (nil: the layout says nothing about dark mode).
    public var dark: DarkColours? = nil
}

/// The More tab's own item.
public struct MoreTab: Sendable, Equatable {
    public var title: String?
    public var image: String?
    public var selectedImage: String?
    public var extensions: [String: JSONValue] = [:]
    public var accessibilityLabel: String? = nil
    public var accessibilityHint: String? = nil
}

/// The tab selected at launch: an id, or an index into the layout's tabs.
public enum InitialTab: Sendable, Equatable {
    case id(String)
    case index(Int)
}

/// A source after validation: either shape (the legacy array becomes `tabs`), not yet inherited or localized.
public struct LayoutDocument: Sendable, Equatable {
    public var extends: String?
    public var tabs: [TabSpec]
    public var remove: [String] = []
    public var order: [String] = []
    public var initialTab: InitialTab?
    public var maxVisibleTabs: Int?
    public var defaultLocale: String?
    public var moreTab: MoreTab?
    public var appearance: Appearance?
    /// locale → key → text.
    public var strings: [String: [String: String]] = [:]
    public var extensions: [String: JSONValue] = [:]
    /// The sidebar's sections, in order (nil: none given).
    public var groups: [TabGroup]? = nil

    /// Every app-version bound named by a tab or child (they split app versions into the classes a
    /// compiled variant depends on).
    public var versionBounds: [AppVersion] {
        var bounds: Set<AppVersion> = []
        func visit(_ tabs: [TabSpec]) {
            for tab in tabs {
                if let v = tab.minAppVersion { bounds.insert(v) }
                if let v = tab.maxAppVersion { bounds.insert(v) }
                visit(tab.children)
            }
        }
        visit(tabs)
        return bounds.sorted()
    }
}

/// An account's name, the one rule for it wherever a name arrives (a path, a configs file's name, `extends`):
/// `[A-Za-z0-9._-]{1,128}`.
public struct AccountName: Hashable, Sendable, CustomStringConvertible {
    /// The name as given.
    public let text: String

    /// The name, or nil when `text` breaks the rule.
    @inlinable  // specialised in the caller: the read path checks every request's account
    public init?(_ text: some StringProtocol) {
        guard Self.accepts(text.utf8) else { return nil }
        self.text = String(text)
    }

    public var description: String { text }

    @inlinable
    static func accepts(_ bytes: some Collection<UInt8>) -> Bool {
        (1...128).contains(bytes.count)
            && bytes.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }
}

/// A locale tag as tables and `defaultLocale` name it: `en`, `fr-CA`, `zh_Hant_TW`.
public func isValidLocale(_ text: some StringProtocol) -> Bool {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false).flatMap {
        $0.split(separator: "_", omittingEmptySubsequences: false)
    }
    guard let first = parts.first, (2...8).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else {
        return false
    }
    return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
}
