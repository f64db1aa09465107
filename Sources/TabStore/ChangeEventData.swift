import TabDelivery

/// The `data` of a change event, one source for `/v1/events` and webhook payloads: a canonical JSON object
/// (members sorted by name, no whitespace, `/` not escaped) of `account` or `locale`, `at` (RFC 3339 with
/// milliseconds), `author`, `deleted` (only when true), `environment` (where it was published), `etag` and `version`.
public enum ChangeEventData {
    /// The data of a stored layout version (or deletion record).
    public static func layout(_ record: StoredVersion, environment: String) -> [UInt8] {
        encode(
            account: record.account, locale: nil, environment: environment, version: record.version, etag: record.etag,
            author: record.author, atMillis: record.createdAtMillis, deleted: record.deleted)
    }

    /// The data of a stored strings table version.
    public static func strings(_ record: StoredStrings, environment: String) -> [UInt8] {
        encode(
            account: nil, locale: record.locale, environment: environment, version: record.version, etag: record.etag,
            author: record.author, atMillis: record.createdAtMillis, deleted: false)
    }

    /// The data of a layout's promotion: `account`, `environment` (where the pointer moved), `from`, `version`,
    /// `etag`, `author`, `at`.
    public static func promotion(_ record: StoredVersion, from: String, to: String, author: String, atMillis: Int64) -> [UInt8] {
        promotion(
            ("account", record.account), version: record.version, etag: record.etag, from: from, to: to, author: author, atMillis: atMillis)
    }

    /// The data of a strings table's promotion: as a layout's, with `locale` for `account`.
    public static func promotion(_ record: StoredStrings, from: String, to: String, author: String, atMillis: Int64) -> [UInt8] {
        promotion(
            ("locale", record.locale), version: record.version, etag: record.etag, from: from, to: to, author: author, atMillis: atMillis)
    }

    private static func promotion(
        _ subject: (String, String), version: Int, etag: String, from: String, to: String, author: String, atMillis: Int64
    ) -> [UInt8] {
        let members: [(String, [UInt8])] = [
            (subject.0, string(subject.1)), ("at", string(Timestamp(unixMillis: atMillis).rfc3339)), ("author", string(author)),
            ("environment", string(to)), ("etag", string(etag)), ("from", string(from)), ("version", Array(String(version).utf8)),
        ].sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += string(member.0) + [UInt8(ascii: ":")] + member.1
        }
        return out + [UInt8(ascii: "}")]
    }

    /// The object from its fields.
    public static func encode(
        account: String?, locale: String?, environment: String, version: Int, etag: String, author: String?, atMillis: Int64,
        deleted: Bool
    ) -> [UInt8] {
        var members: [(String, [UInt8])] = [
            ("at", string(Timestamp(unixMillis: atMillis).rfc3339)), ("environment", string(environment)), ("etag", string(etag)),
            ("version", Array(String(version).utf8)),
        ]
        if let account { members.append(("account", string(account))) }
        if let locale { members.append(("locale", string(locale))) }
        if let author { members.append(("author", string(author))) }
        if deleted { members.append(("deleted", Array("true".utf8))) }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.sorted(by: { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += string(member.0) + [UInt8(ascii: ":")] + member.1
        }
        return out + [UInt8(ascii: "}")]
    }

    /// A JSON string: `"` and `\` escaped, controls as `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`, the rest as is.
    static func string(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
            case 0x0A: out += Array("\\n".utf8)
            case 0x0D: out += Array("\\r".utf8)
            case 0x09: out += Array("\\t".utf8)
            case 0x08: out += Array("\\b".utf8)
            case 0x0C: out += Array("\\f".utf8)
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        return out + [UInt8(ascii: "\"")]
    }
}
