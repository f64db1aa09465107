import Foundation

/// `GET …/tabs/manifest` (API.md, "One answer for every install"): the same bytes for every install, from which a
/// client in manifest mode chooses its arm of a rollout itself and then fetches that version by number.
public struct Manifest: Sendable, Hashable, Decodable {
    public var account: String
    public var environment: String
    /// The layout served: the account's, or `default`.
    public var layout: String?
    /// Grows with every change to this manifest; an older one never replaces a newer one.
    public var revision: Int
    public var stable: Stable
    public var rollout: Rollout?

    public struct Stable: Sendable, Hashable, Decodable {
        public var version: Int
    }

    /// A running (or scheduled) rollout: its candidate version, seed, share now, testers, and steps to come.
    public struct Rollout: Sendable, Hashable, Decodable {
        public var id: Int
        public var version: Int
        public var seed: String
        /// The share now, 0 to 100.
        public var percent: Double
        /// Installs that get the candidate whatever their bucket.
        public var installs: [String]
        /// Steps still to come with their times (RFC 3339); empty while paused.
        public var schedule: [Step]?

        public struct Step: Sendable, Hashable, Decodable {
            public var percent: Double
            public var at: String
        }
    }

    /// The version `installID` gets: the rollout's when its bucket is below `percent × 100` or it is one of
    /// `installs`, else the stable one.
    public func version(for installID: String) -> Int {
        guard let rollout else { return stable.version }
        if rollout.installs.contains(installID) { return rollout.version }
        // In basis points, as the server keeps the share (0.07 % is 7, although 0.07 × 100 is 7.000000000000001).
        let basisPoints = Int((rollout.percent * 100).rounded())
        return Bucket.of(installID: installID, seed: rollout.seed) < basisPoints ? rollout.version : stable.version
    }

    /// Decodes a manifest.
    /// - Throws: ``TabClientError/invalidManifest(_:)``.
    public static func decode(_ data: Data) throws(TabClientError) -> Manifest {
        do {
            return try JSONDecoder().decode(Manifest.self, from: data)
        } catch {
            throw .invalidManifest(CompiledLayout.describe(error))
        }
    }
}
