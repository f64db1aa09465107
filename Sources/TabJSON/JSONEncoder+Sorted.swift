import Foundation

extension JSONEncoder {
    /// The one configuration of the JSON made from `Encodable` values (answers, rollout records, manifests, change
    /// requests): members sorted by key, `/` not escaped, no whitespace, as ``CanonicalJSON`` writes.
    public static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
