/// Content negotiation and conditional-request matching (RFC 9110 §12 and §13).
enum Negotiation {
    /// The offered format with the highest q among `accept`'s media ranges (ties go to the earlier offer);
    /// nil when the client accepts none of them (406). No header accepts anything.
    static func choose(accept: String?, offers: [(RepresentationFormat, String)]) -> RepresentationFormat? {
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
        var best: (format: RepresentationFormat, q: Double)?
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

    /// Whether an `If-None-Match` field (bytes) matches `etag` by weak comparison, or is `*`.
    static func ifNoneMatch(_ field: UnsafeBufferPointer<UInt8>, matches etag: String) -> Bool {
        var index = 0
        let count = field.count
        return etag.utf8.withContiguousStorageIfAvailable { tag -> Bool in
            while index < count {
                while index < count, field[index] == 0x20 || field[index] == 0x09 || field[index] == 0x2C { index += 1 }
                if index >= count { break }
                if field[index] == UInt8(ascii: "*") { return true }
                if index + 1 < count, field[index] == UInt8(ascii: "W"), field[index + 1] == UInt8(ascii: "/") { index += 2 }
                let start = index
                if index < count, field[index] == UInt8(ascii: "\"") {
                    index += 1
                    while index < count, field[index] != UInt8(ascii: "\"") { index += 1 }
                    index += 1
                } else {
                    while index < count, field[index] != 0x2C { index += 1 }
                }
                let end = min(index, count)
                if end - start == tag.count, memcmp(field.baseAddress! + start, tag.baseAddress!, tag.count) == 0 { return true }
            }
            return false
        } ?? false
    }

    /// The entity tags of an `If-Match` field (`*` kept as `*`), for strong comparison.
    static func entityTags(_ field: String) -> [String] {
        var tags: [String] = []
        var rest = Substring(field)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
            guard let first = rest.first else { break }
            if first == "*" {
                tags.append("*")
                rest = rest.dropFirst()
            } else if rest.hasPrefix("W/") {
                // Weak tags never match strongly: keep them out.
                rest = rest.dropFirst(2)
                if rest.first == "\"" { rest = rest.dropFirst().drop { $0 != "\"" }.dropFirst() }
            } else if first == "\"" {
                let body = rest.dropFirst().prefix { $0 != "\"" }
                tags.append("\"" + body + "\"")
                rest = rest.dropFirst(body.count + 2)
            } else {
                let token = rest.prefix { $0 != "," }
                tags.append(String(token).trimmingCharacters(in: " \t"))
                rest = rest.dropFirst(token.count)
            }
        }
        return tags
    }
}

#if canImport(Glibc)
    import Glibc
#endif
