import Foundation

/// One vector of `Clients/conformance/bucket-vectors.json`: the contract's buckets, kept once for the server's tests
/// and both clients' (docs/rollouts.md).
struct BucketVector: Decodable, CustomStringConvertible {
    let seed: String
    let installId: String
    let bucket: Int

    var description: String { "seed \"\(seed)\", install \"\(installId)\": \(bucket)" }

    /// The file, found from this source file: `Tests/TabDeliveryTests` → the repository → `Clients/conformance`.
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Clients/conformance/bucket-vectors.json")

    /// Every vector of the file.
    /// - Throws: the file cannot be read, or is not `{"vectors": [{"seed", "installId", "bucket"}]}`.
    static func contract() throws -> [BucketVector] {
        struct Document: Decodable { let vectors: [BucketVector] }
        return try JSONDecoder().decode(Document.self, from: Data(contentsOf: file)).vectors
    }
}
