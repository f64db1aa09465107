/// The opaque id an app makes once and keeps, named by `X-Install-Id` or `?installId=`: at most 128 characters
/// (Unicode scalars), none of them a control character. It is hashed into a ``Bucket``, never interpreted.
public struct InstallID: Sendable, Hashable, CustomStringConvertible {
    /// The longest id accepted, in Unicode scalars.
    public static let maximumLength = 128

    public let text: String

    /// Checks a header or query value.
    /// - Returns: nil for an empty value (the request then has no install id and gets the stable version).
    /// - Throws: ``RolloutError/invalidInstallID(_:)`` (400) for an id over 128 characters or with a control
    ///   character.
    public static func parse(_ value: String) throws(RolloutError) -> InstallID? {
        if value.isEmpty { return nil }
        return try InstallID(value)
    }

    /// An install id that must be valid (a tester listed in a rollout, or a parsed header).
    /// - Throws: ``RolloutError/invalidInstallID(_:)``.
    public init(_ text: String) throws(RolloutError) {
        if let problem = Self.problem(with: text) { throw .invalidInstallID(problem) }
        self.text = text
    }

    /// What is wrong with `text` as an install id, or nil.
    static func problem(with text: String) -> String? {
        if text.isEmpty { return "an install id is empty" }
        let length = text.unicodeScalars.count
        if length > maximumLength {
            return "an install id has at most \(maximumLength) characters; this one has \(length)"
        }
        if let control = text.unicodeScalars.first(where: isControl) {
            let code = String(control.value, radix: 16, uppercase: true)
            return "an install id may not contain control characters (U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code))"
        }
        return nil
    }

    /// Whether `scalar` is a control character (general category Cc: U+0000–U+001F and U+007F–U+009F, a set Unicode's
    /// stability policy fixes), compared by value: looking the category up was a tenth of the CPU of a read with an
    /// install id.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The bucket of this install under a rollout's seed.
    public func bucket(seed: String) -> Int { Bucket.of(installID: text, seed: seed) }

    public var description: String { text }
}
