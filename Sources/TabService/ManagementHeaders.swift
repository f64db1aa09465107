/// Request-header helpers of the management plane (the client plane decides over bytes with HeaderFields).
enum ManagementHeaders {

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
