import Foundation
import TabClient

/// A compiled layout drawn as text: a header, the bar (the initial tab between `*`, badges in brackets, More
/// with its count), and one line per navigation list (More's tabs, a tab's children).
enum TabBarText {
    static func render(_ layout: CompiledLayout, etag: String?, source: String, now: Date = Date()) -> String {
        let time = ISO8601DateFormatter.string(from: now, timeZone: .current, formatOptions: [.withTime, .withColonSeparatorInTime])
        var header = "\(layout.layout)"
        if let version = layout.version { header += " v\(version)" }
        header += " · \(layout.locale) · \(source)"
        if let etag { header += " · ETag \(etag)" }
        header += " · \(time)"

        var items = layout.tabs.map { item($0, selected: $0.tag == layout.initialIndex) }
        if let more = layout.more {
            let selected = more.tabs.contains { $0.tag == layout.initialIndex }
            items.append((selected ? "*" : "") + "\(more.title) ⋯\(more.tabs.count)" + (selected ? "*" : ""))
        }
        var lines = [header, "| " + items.joined(separator: " | ") + " |"]
        if let more = layout.more {
            lines.append("  \(more.title) ▸ " + more.tabs.map { item($0, selected: $0.tag == layout.initialIndex) }.joined(separator: ", "))
        }
        for tab in layout.allTabs {
            if let children = tab.children, !children.isEmpty {
                lines.append("  \(tab.title) ▸ " + children.map { item($0, selected: false) }.joined(separator: ", "))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func item(_ tab: CompiledLayout.Tab, selected: Bool) -> String {
        var text = tab.title
        if let badge = tab.badge { text += " [\(badge)]" }
        return selected ? "*\(text)*" : text
    }
}
