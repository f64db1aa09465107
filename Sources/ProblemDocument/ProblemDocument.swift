import TabJSON

/// An RFC 9457 problem details document, and its one writer: every problem body the server sends (the service's
/// problems, MicroHTTPD's own refusals, the start-up probes) is written here, with its members in one fixed order
/// (their names' UTF-8 bytes, as canonical JSON orders them) and one escaping (``JSONString``).
public struct ProblemDocument: Sendable {
    /// The media type of a problem document.
    public static let mediaType = "application/problem+json"

    /// A URI naming the kind of problem (`urn:tabserver:problem:not-found`, or `about:blank`).
    public var type: String
    /// The status's reason phrase (`Not Found`).
    public var title: String
    public var status: Int
    /// What went wrong with this request, for a person.
    public var detail: String
    /// Further members (RFC 9457 §3.2, e.g. `errors`), each its name and its value already written as JSON. A member
    /// named like one of the four above is left out: those are the document's own.
    public var members: [(name: String, json: [UInt8])]

    /// A problem document.
    public init(type: String, title: String, status: Int, detail: String, members: [(name: String, json: [UInt8])] = []) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.members = members
    }

    /// The document as JSON: one object, its members ordered by their names' UTF-8 bytes, no insignificant whitespace.
    public var json: [UInt8] {
        let standard: [(name: String, json: [UInt8])] = [
            ("type", Self.string(type)), ("title", Self.string(title)), ("status", Array(String(status).utf8)),
            ("detail", Self.string(detail)),
        ]
        let own = Set(standard.map(\.name))
        let all = (standard + members.filter { !own.contains($0.name) }).sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in all.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONString.write(member.name, into: &out)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: member.json)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static func string(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        JSONString.write(text, into: &out)
        return out
    }
}
