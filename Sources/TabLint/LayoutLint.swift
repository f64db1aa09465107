import Foundation
import TabLayout

/// One thing a layout may want to change, though it compiles: where (a JSON Pointer into the layout), which rule,
/// and why. Writes succeed with warnings; they are advice, never a refusal.
public struct LintWarning: Sendable, Equatable, CustomStringConvertible {
    public var pointer: String
    public var rule: LintRule
    public var message: String

    public init(pointer: String, rule: LintRule, message: String) {
        self.pointer = pointer
        self.rule = rule
        self.message = message
    }

    /// `{"pointer", "rule", "message"}`, as write answers carry it.
    public var json: JSONValue {
        .object(["pointer": .string(pointer), "rule": .string(rule.rawValue), "message": .string(message)])
    }

    /// `/tabs: android-more: …`, as `tabserver validate` prints it.
    public var description: String { "\(pointer.isEmpty ? "/" : pointer): \(rule.rawValue): \(message)" }
}

/// The rules, each named as the warnings name it.
public enum LintRule: String, Sendable, CaseIterable, Hashable {
    /// Android clients will get More (their bar holds at most five items).
    case androidMore = "android-more"
    /// More than five tabs visible on iPhone without `maxVisibleTabs`.
    case iphoneOverflow = "iphone-overflow"
    /// A tab whose title is empty in some locale and that has no accessibility label.
    case iconOnly = "icon-only"
    /// A tint against its background below 3:1 (WCAG's contrast ratio), in light or dark.
    case contrast
    /// A localization key with no text in a locale the tables serve.
    case missingString = "missing-string"
}

/// The lint of a resolved layout: pure, no clock, no store; the layout and the global tables in, warnings out.
public enum LayoutLint {
    /// The least contrast ratio of a tint against its background (WCAG 2.x 1.4.11, non-text contrast).
    public static let minimumContrast = 3.0

    /// Every warning for `layout`, in rule order, then pointer order.
    /// - Parameter globalStrings: locale → table, the global tables the layout is compiled with.
    public static func warnings(_ layout: ResolvedLayout, globalStrings: [String: StringsTable] = [:]) -> [LintWarning] {
        var found: [LintWarning] = []
        found += barWarnings(layout)
        let locales = servedLocales(layout, globalStrings)
        found += iconOnly(layout, globalStrings, locales: locales)
        found += contrast(layout.appearance)
        found += missingStrings(layout, globalStrings, locales: locales)
        return found
    }

    /// The locales a client can be answered in: every table's, and the default locale.
    static func servedLocales(_ layout: ResolvedLayout, _ global: [String: StringsTable]) -> [String] {
        Set(layout.strings.keys).union(global.keys).union([layout.defaultLocale]).sorted()
    }

    // MARK: The bar

    static func barWarnings(_ layout: ResolvedLayout) -> [LintWarning] {
        var found: [LintWarning] = []
        let android = layout.tabs.filter { LayoutCompiler.admits($0, ClientContext(locale: "", platform: .android)) }.count
        let limit = LayoutCompiler.androidBarItems
        if android > limit, (layout.maxVisibleTabs ?? Int.max) > limit {
            found.append(
                LintWarning(
                    pointer: "/tabs", rule: .androidMore,
                    message:
                        "android clients get \(android) tabs and their bar holds \(limit) items: they get \(limit - 1) tabs and More"))
        }
        let iphone = layout.tabs.filter { LayoutCompiler.admits($0, ClientContext(locale: "", platform: .iphone)) }.count
        if iphone > 5, layout.maxVisibleTabs == nil {
            found.append(
                LintWarning(
                    pointer: "/tabs", rule: .iphoneOverflow,
                    message:
                        "iPhone clients see \(iphone) tabs in one bar; Apple's guidance is at most five (set maxVisibleTabs: 5 for 4 and More)"
                ))
        }
        return found
    }

    // MARK: Words

    /// Tabs (and children) whose title is empty in a locale while no accessibility label says what they are.
    static func iconOnly(_ layout: ResolvedLayout, _ global: [String: StringsTable], locales: [String]) -> [LintWarning] {
        var found: [LintWarning] = []
        visit(layout.tabs, "/tabs") { tab, pointer in
            guard tab.accessibilityLabel == nil else { return }
            let empty = locales.filter { text(tab.title, in: $0, layout, global).isEmpty }
            guard !empty.isEmpty else { return }
            found.append(
                LintWarning(
                    pointer: pointer + "/title", rule: .iconOnly,
                    message:
                        "the tab '\(tab.id)' has no title in \(empty.joined(separator: ", ")) and no accessibilityLabel: VoiceOver and TalkBack have nothing to read"
                ))
        }
        return found
    }

    /// Keys (text that some table has as a key) with no text in a served locale, its language or the layout's tables.
    static func missingStrings(_ layout: ResolvedLayout, _ global: [String: StringsTable], locales: [String]) -> [LintWarning] {
        var keys: Set<String> = []
        for table in layout.strings.values { keys.formUnion(table.keys) }
        for table in global.values { keys.formUnion(table.entries.keys) }
        guard !keys.isEmpty else { return [] }
        var found: [LintWarning] = []
        func check(_ key: String?, _ pointer: String) {
            guard let key, keys.contains(key) else { return }
            let missing = locales.filter { locale in
                [locale, LocaleMatcher.language(of: locale)].allSatisfy {
                    layout.strings[$0]?[key] == nil && global[$0]?.entries[key] == nil
                }
            }
            guard !missing.isEmpty else { return }
            found.append(
                LintWarning(
                    pointer: pointer, rule: .missingString,
                    message:
                        "the key '\(key)' has no text in \(missing.joined(separator: ", ")) (clients there get the \(layout.defaultLocale) text or the key)"
                ))
        }
        visit(layout.tabs, "/tabs") { tab, pointer in
            check(tab.title, pointer + "/title")
            check(tab.accessibilityLabel, pointer + "/accessibilityLabel")
            check(tab.accessibilityHint, pointer + "/accessibilityHint")
        }
        check(layout.moreTab?.title, "/moreTab/title")
        check(layout.moreTab?.accessibilityLabel, "/moreTab/accessibilityLabel")
        check(layout.moreTab?.accessibilityHint, "/moreTab/accessibilityHint")
        for (i, group) in layout.groups.enumerated() { check(group.title, "/groups/\(i)/title") }
        return found
    }

    /// `text` as a client in `locale` reads it: the compiler's lookup (exact locale, language, default locale).
    static func text(_ text: String, in locale: String, _ layout: ResolvedLayout, _ global: [String: StringsTable]) -> String {
        var chain = [locale, LocaleMatcher.language(of: locale), layout.defaultLocale, LocaleMatcher.language(of: layout.defaultLocale)]
        var seen: Set<String> = []
        chain.removeAll { !seen.insert($0).inserted }
        for candidate in chain {
            if let hit = layout.strings[candidate]?[text] ?? global[candidate]?.entries[text] { return hit }
        }
        return text
    }

    static func visit(_ tabs: [TabSpec], _ pointer: String, _ body: (TabSpec, String) -> Void) {
        for (i, tab) in tabs.enumerated() {
            let here = "\(pointer)/\(i)"
            body(tab, here)
            visit(tab.children, here + "/children", body)
        }
    }

    // MARK: Colours

    /// Tints against the background, in light, and in dark with each colour dark leaves out taken from light.
    static func contrast(_ appearance: Appearance) -> [LintWarning] {
        var found: [LintWarning] = []
        func check(_ tint: String?, _ background: String?, _ pointer: String, scheme: String) {
            guard let tint, let background, let ratio = contrastRatio(tint, background), ratio < minimumContrast else { return }
            let shown = (ratio * 100).rounded(.down) / 100
            found.append(
                LintWarning(
                    pointer: pointer, rule: .contrast,
                    message: "\(tint) on \(background) has a contrast ratio of \(shown):1 in \(scheme) mode; at least 3:1 is needed"))
        }
        check(appearance.tintColor, appearance.backgroundColor, "/appearance/tintColor", scheme: "light")
        check(appearance.unselectedTintColor, appearance.backgroundColor, "/appearance/unselectedTintColor", scheme: "light")
        if let dark = appearance.dark {
            let background = dark.backgroundColor ?? appearance.backgroundColor
            func pointer(_ key: String, _ own: String?) -> String { own != nil ? "/appearance/dark/\(key)" : "/appearance/\(key)" }
            // A pair is checked again in dark only when dark changes one of its colours.
            if dark.tintColor != nil || dark.backgroundColor != nil {
                check(dark.tintColor ?? appearance.tintColor, background, pointer("tintColor", dark.tintColor), scheme: "dark")
            }
            if dark.unselectedTintColor != nil || dark.backgroundColor != nil {
                check(
                    dark.unselectedTintColor ?? appearance.unselectedTintColor, background,
                    pointer("unselectedTintColor", dark.unselectedTintColor), scheme: "dark")
            }
        }
        return found
    }

    /// WCAG 2.x contrast ratio of two `#RRGGBB[AA]` colours (alpha ignored): (L1 + 0.05) / (L2 + 0.05), from 1 to 21.
    public static func contrastRatio(_ first: String, _ second: String) -> Double? {
        guard let a = relativeLuminance(first), let b = relativeLuminance(second) else { return nil }
        return (max(a, b) + 0.05) / (min(a, b) + 0.05)
    }

    /// WCAG 2.x relative luminance of `#RRGGBB[AA]`: 0.2126 R + 0.7152 G + 0.0722 B of the linearized channels.
    public static func relativeLuminance(_ colour: String) -> Double? {
        let bytes = Array(colour.utf8)
        guard bytes.first == UInt8(ascii: "#"), bytes.count == 7 || bytes.count == 9 else { return nil }
        var channels: [Double] = []
        for i in stride(from: 1, to: 7, by: 2) {
            guard let high = hexValue(bytes[i]), let low = hexValue(bytes[i + 1]) else { return nil }
            let c = Double(high * 16 + low) / 255
            channels.append(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4))
        }
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }
}
