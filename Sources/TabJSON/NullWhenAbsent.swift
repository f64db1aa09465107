/// An optional member that a synthesized `Encodable` writes as `null` when it is nil, where it would leave the key
/// out: for documents whose contract names the key always (`"guard": null`, `"rollout": null`).
@propertyWrapper
public struct NullWhenAbsent<Value: Encodable & Sendable & Hashable>: Encodable, Sendable, Hashable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }
}
