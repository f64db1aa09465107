/// A value JSON holds as its text (`description`), read back through `init?(_:)`: a token's id, an audit cursor.
public protocol TextCodable: Codable, CustomStringConvertible {
    /// The value `text` names, nil when it names none.
    init?(_ text: some StringProtocol)

    /// What a value is, in the refusal of text that names none: "a token id".
    static var textKind: String { get }
}

extension TextCodable {
    /// - Throws: `DecodingError.dataCorrupted` ("'x' is not a token id") for text that names no value.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not \(Self.textKind)"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
