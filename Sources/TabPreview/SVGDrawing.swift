/// Writes a ``TabBarModel`` as an SVG 1.1 document (elements and attributes of SVG 1.1 only: no `href` without
/// `xlink:`, no eight-digit colours, no CSS variables).
struct SVGDrawing {
    let bar: TabBarModel
    let width: Double

    /// The icon's box and the type sizes, in points (close to UIKit's tab bar).
    static let iconWidth = 28.0
    static let iconHeight = 24.0
    static let titleSize = 10.0
    static let iconNameSize = 6.0
    static let badgeSize = 11.0
    /// A rough advance per character as a fraction of the font size, to cut text that cannot fit (Helvetica's
    /// average; the picture is a preview, not a typesetter).
    static let advance = 0.56

    /// The sidebar's width when one is drawn, and the height of each of its rows.
    static let sidebarWidth = 220.0
    static let sidebarRow = 28.0
    /// The trailing slot of the search tab (iOS 18 and Android draw it apart, round).
    static let searchSlot = 64.0

    func bytes() -> [UInt8] {
        var out = SVGWriter()
        let sidebarWidth = bar.sidebar.isEmpty ? 0 : min(Self.sidebarWidth, width / 3)
        let rows = bar.sidebar.reduce(0) { $0 + 1 + $1.tabs.count }
        let height = max(bar.height, bar.sidebar.isEmpty ? 0 : Double(rows) * Self.sidebarRow + 16)
        out.raw("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        out.open(
            "svg",
            [
                ("xmlns", "http://www.w3.org/2000/svg"), ("version", "1.1"), ("width", number(width)), ("height", number(height)),
                ("viewBox", "0 0 \(number(width)) \(number(height))"), ("font-family", "Helvetica, Arial, sans-serif"),
            ])
        var caption = "Tab bar of \(bar.layout.isEmpty ? "a layout" : bar.layout)"
        if let version = bar.version { caption += ", version \(version)" }
        if !bar.locale.isEmpty { caption += ", locale \(bar.locale)" }
        if bar.scheme == .dark { caption += ", dark" }
        out.element("title", [], text: caption)
        if !bar.sidebar.isEmpty { drawSidebar(width: sidebarWidth, height: height, into: &out) }
        let barWidth = width - sidebarWidth
        out.empty(
            "rect",
            [("id", "background"), ("x", number(sidebarWidth)), ("y", "0"), ("width", number(barWidth)), ("height", number(bar.height))]
                + fill(bar.background))
        out.empty(
            "rect",
            [
                ("id", "hairline"), ("x", number(sidebarWidth)), ("y", "0"), ("width", number(barWidth)), ("height", "0.5"),
                ("fill", bar.scheme == .dark ? "#FFFFFF" : "#000000"), ("fill-opacity", "0.3"),
            ])
        let search = bar.searchIndex
        let slot = search == nil ? 0 : min(Self.searchSlot, barWidth / 2)
        let others = bar.items.count - (search == nil ? 0 : 1)
        let itemWidth = others == 0 ? barWidth - slot : (barWidth - slot) / Double(others)
        var position = 0
        for (index, item) in bar.items.enumerated() {
            if index == search {
                drawItem(item, selected: index == bar.selectedIndex, x: width - slot, width: slot, into: &out)
                continue
            }
            drawItem(
                item, selected: index == bar.selectedIndex, x: sidebarWidth + Double(position) * itemWidth, width: itemWidth, into: &out)
            position += 1
        }
        out.close("svg")
        return out.bytes
    }

    /// The sidebar an iPad shows beside the bar: each group's title, then its tabs' titles, indented.
    private func drawSidebar(width sidebarWidth: Double, height: Double, into out: inout SVGWriter) {
        out.open("g", [("id", "sidebar")])
        out.empty(
            "rect",
            [("class", "sidebar"), ("x", "0"), ("y", "0"), ("width", number(sidebarWidth)), ("height", number(height))]
                + fill(bar.background))
        out.empty(
            "rect",
            [
                ("x", number(sidebarWidth - 0.5)), ("y", "0"), ("width", "0.5"), ("height", number(height)),
                ("fill", bar.scheme == .dark ? "#FFFFFF" : "#000000"), ("fill-opacity", "0.3"),
            ])
        var y = 8.0
        for group in bar.sidebar {
            y += Self.sidebarRow
            out.element(
                "text",
                [
                    ("class", "group-title"), ("id", "group-" + group.id), ("x", "12"), ("y", number(y - 10)), ("font-size", "13"),
                    ("font-weight", "bold"),
                ]
                    + fill(bar.tint), text: fitted(group.title, width: sidebarWidth - 24, size: 13))
            for title in group.tabs {
                y += Self.sidebarRow
                out.element(
                    "text", [("class", "group-tab"), ("x", "28"), ("y", number(y - 10)), ("font-size", "13")] + fill(bar.unselected),
                    text: fitted(title, width: sidebarWidth - 40, size: 13))
            }
        }
        out.close("g")
    }

    private func drawItem(_ item: BarItem, selected: Bool, x: Double, width itemWidth: Double, into out: inout SVGWriter) {
        let paint = selected ? bar.tint : bar.unselected
        let centre = x + itemWidth / 2
        // The icon and the title as one block, centred vertically (UIKit's 49-point bar: icon at 5.5, title at 41.5).
        let top = max(1, (bar.height - 38) / 2)
        let isMore = item.id == nil
        out.open(
            "g",
            [
                ("id", isMore ? "more" : "tab-" + (item.id ?? "")),
                ("class", "tab" + (isMore ? " more" : "") + (item.isSearch ? " search" : "") + (selected ? " selected" : "")),
            ])
        let image = selected ? (item.selectedImage ?? item.image) : item.image
        var description = item.title
        if let image { description += ", image \(image)" }
        if let badge = item.badge { description += ", badge \(badge)" }
        if selected { description += ", selected" }
        out.element("title", [], text: description)
        if item.isSearch {
            out.empty(
                "circle",
                [
                    ("class", "search-well"), ("cx", number(centre)), ("cy", number(top + Self.iconHeight / 2)), ("r", "18"),
                    ("fill", "none"),
                ]
                    + stroke(paint) + [("stroke-width", "1")])
        }

        // The icon: a neutral glyph holding the image's name (More without an image: UIKit's three dots).
        out.empty(
            "rect",
            [
                ("class", "icon"), ("x", number(centre - Self.iconWidth / 2)), ("y", number(top)), ("width", number(Self.iconWidth)),
                ("height", number(Self.iconHeight)), ("rx", "6"), ("fill", "none"),
            ] + stroke(paint) + [("stroke-width", "1.5")])
        let glyphText = image.map { fitted($0, width: Self.iconWidth - 4, size: Self.iconNameSize) } ?? (isMore ? "•••" : nil)
        if let glyphText {
            let size = image == nil ? Self.titleSize : Self.iconNameSize
            out.element(
                "text",
                [
                    ("class", "icon-name"), ("x", number(centre)), ("y", number(top + Self.iconHeight / 2 + size * 0.35)),
                    ("text-anchor", "middle"), ("font-size", number(size)),
                ] + fill(paint), text: glyphText)
        }

        out.element(
            "text",
            [
                ("class", "title"), ("x", number(centre)), ("y", number(min(bar.height - 2, top + 36))), ("text-anchor", "middle"),
                ("font-size", number(Self.titleSize)),
            ] + fill(paint), text: fitted(item.title, width: itemWidth - 4, size: Self.titleSize))

        if let badge = item.badge { drawBadge(badge, iconCentre: centre, top: top, into: &out) }
        if selected, bar.animator == "underline" {
            out.empty(
                "rect",
                [
                    ("class", "underline"), ("x", number(x + itemWidth * 0.2)), ("y", number(bar.height - 2)),
                    ("width", number(itemWidth * 0.6)), ("height", "2"),
                ] + fill(bar.tint))
        }
        out.close("g")
    }

    /// UIKit's badge: a red pill at the icon's top right (a dot for an empty badge), white text.
    private func drawBadge(_ badge: String, iconCentre: Double, top: Double, into out: inout SVGWriter) {
        let red = [("fill", TabPreview.badgeColour)]
        if badge.isEmpty {
            out.empty("circle", [("class", "badge"), ("cx", number(iconCentre + 12)), ("cy", number(top + 2)), ("r", "4")] + red)
            return
        }
        let text = fitted(badge, width: 60, size: Self.badgeSize)
        let pillWidth = max(18, Double(text.count) * Self.badgeSize * Self.advance + 10)
        let left = iconCentre + 5
        out.open("g", [("class", "badge")])
        out.empty(
            "rect", [("x", number(left)), ("y", number(top - 4)), ("width", number(pillWidth)), ("height", "18"), ("rx", "9")] + red)
        out.element(
            "text",
            [
                ("x", number(left + pillWidth / 2)), ("y", number(top + 9)), ("text-anchor", "middle"),
                ("font-size", number(Self.badgeSize)),
                ("fill", "#FFFFFF"),
            ], text: text)
        out.close("g")
    }

    private func fill(_ paint: Paint) -> [(String, String)] {
        [("fill", paint.rgb)] + (paint.alpha.map { [("fill-opacity", number(Double($0) / 255))] } ?? [])
    }

    private func stroke(_ paint: Paint) -> [(String, String)] {
        [("stroke", paint.rgb)] + (paint.alpha.map { [("stroke-opacity", number(Double($0) / 255))] } ?? [])
    }

    /// `text`, cut with "…" when it is wider than `width` at `size` points (characters, not grapheme widths).
    private func fitted(_ text: String, width: Double, size: Double) -> String {
        let fits = max(1, Int(width / (size * Self.advance)))
        guard text.count > fits else { return text }
        return String(text.prefix(max(1, fits - 1))) + "…"
    }
}

/// `x` with at most two decimals and no trailing zeros (`49`, `78`, `0.3`, `-1.25`): the same on every machine.
func number(_ x: Double) -> String {
    let hundredths = Int((x * 100).rounded())
    let magnitude = hundredths.magnitude
    var text = (hundredths < 0 ? "-" : "") + String(magnitude / 100)
    let fraction = magnitude % 100
    if fraction != 0 {
        text += fraction % 10 == 0 ? "." + String(fraction / 10) : (fraction < 10 ? ".0" : ".") + String(fraction)
    }
    return text
}

/// An XML writer that escapes every text and attribute value, and replaces the characters XML 1.0 cannot hold
/// (control characters, U+FFFE, U+FFFF) with U+FFFD.
struct SVGWriter {
    private(set) var bytes: [UInt8] = []

    mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    mutating func open(_ name: String, _ attributes: [(String, String)]) {
        start(name, attributes)
        raw(">\n")
    }

    mutating func close(_ name: String) { raw("</\(name)>\n") }

    mutating func empty(_ name: String, _ attributes: [(String, String)]) {
        start(name, attributes)
        raw("/>\n")
    }

    mutating func element(_ name: String, _ attributes: [(String, String)], text: String) {
        start(name, attributes)
        raw(">")
        escape(text, inAttribute: false)
        raw("</\(name)>\n")
    }

    private mutating func start(_ name: String, _ attributes: [(String, String)]) {
        raw("<" + name)
        for (key, value) in attributes {
            raw(" \(key)=\"")
            escape(value, inAttribute: true)
            raw("\"")
        }
    }

    private mutating func escape(_ text: String, inAttribute: Bool) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": raw("&amp;")
            case "<": raw("&lt;")
            case ">": raw("&gt;")
            case "\"" where inAttribute: raw("&quot;")
            case "\t", "\n", "\r": inAttribute ? raw("&#\(scalar.value);") : bytes.append(UInt8(scalar.value))
            case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": raw("\u{FFFD}")
            default: UTF8.encode(scalar) { bytes.append($0) }
            }
        }
    }
}
