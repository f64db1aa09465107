import Foundation

/// `GET …/tabs/manifest` (docs/rollouts.md, "Manifest mode"): the same bytes for every install, from which a
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
    /// The versions revoked in every environment (the newest 32): never shown, dropped at once when shown.
    public var revoked: [Int]?

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
            /// RFC 3339, e.g. `2026-11-26T21:00:00.000Z`.
            public var at: String

            /// ``at`` as a time (``Manifest/decode(_:)`` refuses a manifest where it is not one).
            public var date: Date? { RFC3339.date(at) }

            /// ``percent`` in basis points, as the server keeps a share (0.07 % is 7).
            var basisPoints: Int { Int((percent * 100).rounded()) }
        }

        /// The share at `date` by the device's clock: the share now, or the largest of the steps whose time has come
        /// (a manifest is cached for no longer than its next step, so a step already past means the clock has reached it
        /// before the next manifest came; the share only grows).
        func basisPoints(at date: Date) -> Int {
            var share = Int((percent * 100).rounded())
            for step in schedule ?? [] where step.date.map({ $0 <= date }) ?? false { share = max(share, step.basisPoints) }
            return share
        }
    }

    /// A coming step that moves an install to the rollout's candidate: the version, and when.
    struct Move: Sendable, Hashable {
        var version: Int
        var at: Date
        /// ``at`` as the manifest wrote it (kept with the prefetched candidate).
        var text: String
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

    /// The version `installID` gets at `date` by the device's clock: as ``version(for:)``, with the share of the steps
    /// of the schedule whose time has come.
    public func version(for installID: String, at date: Date) -> Int {
        guard let rollout else { return stable.version }
        if rollout.installs.contains(installID) { return rollout.version }
        return Bucket.of(installID: installID, seed: rollout.seed) < rollout.basisPoints(at: date) ? rollout.version : stable.version
    }

    /// The first step after `date` that moves `installID` to the candidate, when it does not have it at `date`: what
    /// a client prefetches, and when it switches. Nil without a rollout, while paused (no steps), for an install that
    /// has the candidate already and for one no coming step reaches.
    func move(for installID: String, after date: Date) -> Move? {
        guard let rollout, version(for: installID, at: date) != rollout.version else { return nil }
        let bucket = Bucket.of(installID: installID, seed: rollout.seed)
        var first: Move?
        for step in rollout.schedule ?? [] where bucket < step.basisPoints {
            guard let at = step.date, at > date, first.map({ at < $0.at }) ?? true else { continue }
            first = Move(version: rollout.version, at: at, text: step.at)
        }
        return first
    }

    /// Decodes a manifest.
    /// - Throws: ``TabClientError/invalidManifest(_:)``, also for a step whose `at` is not an RFC 3339 time.
    public static func decode(_ data: Data) throws(TabClientError) -> Manifest {
        let manifest: Manifest
        do {
            manifest = try JSONLimits.decode(Manifest.self, from: data)
        } catch {
            throw .invalidManifest(CompiledLayout.describe(error))
        }
        for (index, step) in (manifest.rollout?.schedule ?? []).enumerated() where step.date == nil {
            throw .invalidManifest("/rollout/schedule/\(index)/at: \(String(reflecting: step.at)) is not an RFC 3339 time")
        }
        return manifest
    }
}
