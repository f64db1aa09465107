import TabLayout

/// A tab a build would get but could not open.
public struct BuildMiss: Sendable, Equatable {
    /// Where in the layout, e.g. `/tabs/1/rootViewController` or `/tabs/0/children/2/image`.
    public var pointer: String
    public var build: BuildID
    /// The name the build lacks.
    public var value: String

    /// `iphone 2.0 has no SearchViewController`.
    public var message: String { "build \(build) does not declare '\(value)'" }
}

/// "Can every live build open what it would get?" and "what may a build be sent?": the gate before a change moves
/// what apps get, and the trim of each answer to a declared build (docs/builds.md).
public enum BuildGate {
    /// The tabs and children of `layout` that `build` would get (targeting: `platforms`, `minAppVersion`,
    /// `maxAppVersion`) but whose `rootViewController` (or, when the build lists images, `image`/`selectedImage`) it
    /// does not declare.
    public static func misses(_ layout: ResolvedLayout, for build: Build) -> [BuildMiss] {
        var misses: [BuildMiss] = []
        func walk(_ tabs: [TabSpec], at path: String) {
            for (index, tab) in tabs.enumerated() where LayoutCompiler.admits(tab, build.context) {
                let pointer = "\(path)/\(index)"
                misses += missing(tab, build).map { BuildMiss(pointer: "\(pointer)/\($0.field)", build: build.id, value: $0.value) }
                walk(tab.children, at: pointer + "/children")
            }
        }
        walk(layout.tabs, at: "/tabs")
        return misses
    }

    /// `layout` with the tabs and children `build` cannot open left out, and their ids (what `Tabs-Withheld` names).
    public static func trimmed(_ layout: ResolvedLayout, for build: Build) -> (layout: ResolvedLayout, withheld: [String]) {
        var withheld: [String] = []
        func keep(_ tabs: [TabSpec]) -> [TabSpec] {
            tabs.compactMap { tab in
                guard !LayoutCompiler.admits(tab, build.context) || missing(tab, build).isEmpty else {
                    withheld.append(tab.id)
                    return nil
                }
                var kept = tab
                kept.children = keep(tab.children)
                return kept
            }
        }
        var layout = layout
        // The initial tab stays the same tab: named by its id before the tabs before it may go.
        if case .index(let index) = layout.initialTab, index < layout.tabs.count { layout.initialTab = .id(layout.tabs[index].id) }
        layout.tabs = keep(layout.tabs)
        return (layout, withheld)
    }

    /// Whether `build` would get tabs of `layout` but can open none of them (`trimmed` is what ``trimmed(_:for:)``
    /// left): such a build is given an earlier version it opens whole, not an empty tab bar. Tabs targeted away from
    /// the build (kept by the trim, never sent) do not count.
    public static func opensNone(of layout: ResolvedLayout, trimmed: ResolvedLayout, for build: Build) -> Bool {
        layout.tabs.contains { LayoutCompiler.admits($0, build.context) }
            && !trimmed.tabs.contains { LayoutCompiler.admits($0, build.context) }
    }

    private static func missing(_ tab: TabSpec, _ build: Build) -> [(field: String, value: String)] {
        var missing: [(String, String)] = []
        if !build.viewControllers.contains(tab.rootViewController) { missing.append(("rootViewController", tab.rootViewController)) }
        if let images = build.images {
            if let image = tab.image, !images.contains(image) { missing.append(("image", image)) }
            if let image = tab.selectedImage, !images.contains(image) { missing.append(("selectedImage", image)) }
        }
        return missing
    }
}

extension Build {
    /// What the compiler's targeting sees of this build.
    var context: ClientContext { ClientContext(locale: "", platform: id.platform, appVersion: id.appVersion) }
}
