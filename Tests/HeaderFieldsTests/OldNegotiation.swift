import Foundation  // replacingOccurrences(of:with:) in LocaleMatcher.normalized

// The Foundation-based code HeaderFields replaces, copied as it was (Sources/TabService/Negotiation.swift
// `choose(accept:offers:)` and Sources/TabLayout/LayoutCompiler.swift `LocaleMatcher`, at commit 6b3be60), with only
// the offered format type made an Int: the oracle of the differential tests. Do not "fix" it.

enum OldNegotiation {
    /// The offered format with the highest q among `accept`'s media ranges (ties go to the earlier offer);
    /// nil when the client accepts none of them (406). No header accepts anything.
    static func choose(accept: String?, offers: [(Int, String)]) -> Int? {
        guard let accept, !accept.trimmingCharacters(in: " \t").isEmpty else { return offers.first?.0 }
        var ranges: [(type: String, subtype: String, q: Double)] = []
        for part in accept.split(separator: ",") {
            let pieces = part.split(separator: ";")
            let media = (pieces.first ?? "").trimmingCharacters(in: " \t").lowercased()
            let halves = media.split(separator: "/", maxSplits: 1)
            guard halves.count == 2 else { continue }
            var q = 1.0
            for parameter in pieces.dropFirst() {
                let p = parameter.trimmingCharacters(in: " \t").lowercased()
                if p.hasPrefix("q=") { q = Double(p.dropFirst(2)) ?? 0 }
            }
            ranges.append((String(halves[0]), String(halves[1]), q))
        }
        var best: (format: Int, q: Double)?
        for (format, type) in offers {
            let halves = type.split(separator: "/")
            var q: Double?
            var specificity = -1
            for range in ranges {
                let level: Int
                if range.type == halves[0] && range.subtype == halves[1] {
                    level = 2
                } else if range.type == halves[0] && range.subtype == "*" {
                    level = 1
                } else if range.type == "*" && range.subtype == "*" {
                    level = 0
                } else {
                    continue
                }
                if level > specificity {
                    specificity = level
                    q = range.q
                }
            }
            if let q, q > 0, q > (best?.q ?? 0) { best = (format, q) }
        }
        return best?.format
    }
}

enum OldLocaleMatcher {
    static func choose(acceptLanguage: String?, available: [String], fallback: String) -> String {
        guard let acceptLanguage else { return fallback }
        var ranges: [(tag: String, q: Double, position: Int)] = []
        for (position, part) in acceptLanguage.split(separator: ",").enumerated() {
            let pieces = part.split(separator: ";")
            let tag = pieces.first.map { $0.trimmingWhitespace() } ?? ""
            guard !tag.isEmpty else { continue }
            var q = 1.0
            for parameter in pieces.dropFirst() {
                let p = parameter.trimmingWhitespace()
                if p.hasPrefix("q=") || p.hasPrefix("Q=") { q = Double(p.dropFirst(2)) ?? 0 }
            }
            if q > 0 { ranges.append((tag, q, position)) }
        }
        ranges.sort { $0.q != $1.q ? $0.q > $1.q : $0.position < $1.position }
        for range in ranges {
            if range.tag == "*" { return fallback }
            if let match = match(range.tag, available) { return match }
        }
        return fallback
    }

    static func match(_ tag: String, _ available: [String]) -> String? {
        var candidate = normalized(tag)
        while !candidate.isEmpty {
            if let hit = available.first(where: { normalized($0) == candidate }) { return hit }
            guard let cut = candidate.lastIndex(of: "-") else { break }
            candidate = String(candidate[..<cut])
        }
        return nil
    }

    static func normalized(_ tag: String) -> String { tag.lowercased().replacingOccurrences(of: "_", with: "-") }
}

extension StringProtocol {
    /// As in Sources/TabLayout/XMLPlistReader.swift.
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

extension StringProtocol {
    /// As in Sources/TabService/Snapshot+Build.swift (Character-based, not Foundation's).
    func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        guard let first = firstIndex(where: { !characters.contains($0) }), let last = lastIndex(where: { !characters.contains($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
