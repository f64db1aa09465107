import Logging
import Synchronization
import TabDelivery
import TabStore

/// A rollout the snapshot serves: the rollout as last recorded, its two arms ready to serve, and its answer counts.
/// Both arms' representations name `X-Install-Id` in `Vary`, so a cache keeps one per install, not one for all.
final class ServedRollout: Sendable {
    let rollout: Rollout
    /// The candidate version's record (its document parsed on first use).
    let candidateDocument: LazyDocument
    let stable: LazyEntry
    let candidate: LazyEntry
    let counts: ArmCounts

    static let vary = "X-Install-Id"

    /// The arms of `rollout`, whose representations vary on `vary` (the snapshot's) and `X-Install-Id`.
    init(rollout: Rollout, candidateDocument: LazyDocument, vary: String?, counts: ArmCounts) {
        self.rollout = rollout
        self.candidateDocument = candidateDocument
        self.counts = counts
        let varies = [vary, Self.vary].compactMap { $0 }.joined(separator: ", ")
        stable = LazyEntry(account: rollout.account, extraVary: varies)
        candidate = LazyEntry(account: rollout.account, own: candidateDocument, extraVary: varies)
    }

    /// The same rollout with its arms made anew (resolved again on their next request).
    func rebuilt(vary: String?) -> ServedRollout {
        ServedRollout(rollout: rollout, candidateDocument: candidateDocument, vary: vary, counts: counts)
    }

    /// The entry an install gets now (the stable one when the candidate no longer resolves).
    func entry(for install: InstallID?, at now: Timestamp, in context: ResolutionContext) -> LayoutEntry? {
        if rollout.arm(for: install, at: now) == .candidate, let entry = candidate.value(in: context) { return entry }
        return stable.value(in: context)
    }

    /// Counts one answer to `install` at `now` in its arm.
    func count(_ install: InstallID?, at now: Timestamp) {
        if rollout.arm(for: install, at: now) == .candidate {
            counts.candidate.add(1, ordering: .relaxed)
        } else {
            counts.stable.add(1, ordering: .relaxed)
        }
    }
}

/// Answers per arm of one rollout on this replica since it started (kept across publications).
final class ArmCounts: Sendable {
    let candidate = Atomic<Int>(0)
    let stable = Atomic<Int>(0)
    /// Client-plane 5xx answers for the rollout's account while it is served (not stored: a per-replica counter).
    let serverErrors = Atomic<Int>(0)

    var served: ServedCounts {
        ServedCounts(candidate: candidate.load(ordering: .relaxed), stable: stable.load(ordering: .relaxed))
    }
}

/// This replica's ``ArmCounts``, by rollout, so that a rollout's counts survive the snapshots that re-record it.
final class ArmCountsRegistry: Sendable {
    private let byRollout = Mutex<[String: ArmCounts]>([:])

    static func key(_ rollout: Rollout) -> String { "\(rollout.account)\u{0}\(rollout.environment.text)\u{0}\(rollout.id)" }

    /// The counts of `rollout`, made on first use.
    func counts(for rollout: Rollout) -> ArmCounts {
        byRollout.withLock { map in
            if let known = map[Self.key(rollout)] { return known }
            let made = ArmCounts()
            map[Self.key(rollout)] = made
            return made
        }
    }

    /// This replica's counts of `rollout` (zero when it served none).
    func served(_ rollout: Rollout) -> ServedCounts {
        byRollout.withLock { $0[Self.key(rollout)]?.served } ?? ServedCounts(candidate: 0, stable: 0)
    }
}

extension Snapshot {
    /// The entry that serves `account` for `install` at `now`: during a rollout of the layout that serves it (its
    /// own, else `default`'s) the install's arm, else ``entry(for:)``.
    func entry(for account: String, install: InstallID?, at now: @autoclosure () -> Timestamp) -> LayoutEntry? {
        guard !contents.rollouts.isEmpty else { return entry(for: account) }
        let owner = entries[account]?.value(in: context) != nil ? account : "default"
        if let served = contents.rollouts[owner] { return served.entry(for: install, at: now(), in: context) ?? entry(for: account) }
        return entry(for: account)
    }

    /// The rollouts this snapshot and the other environments' serve.
    var everyRollout: [ServedRollout] {
        Array(contents.rollouts.values) + contents.environments.values.flatMap { $0.contents.rollouts.values }
    }

    /// Counts an answer to `install` for `account` in its rollout arm, when a rollout serves it (once per answer: a
    /// request replayed after its variant was built is counted when it is answered).
    func countServed(_ account: String, install: InstallID?, at now: @autoclosure () -> Timestamp) {
        guard !contents.rollouts.isEmpty else { return }
        contents.rollouts[entries[account]?.value(in: context) != nil ? account : "default"]?.count(install, at: now())
    }

    /// Counts a 5xx answered to a client-plane request for `account` against the rollout serving it, if one is under
    /// way: `tabserver_rollout_server_errors_total`, the per-rollout signal an alert rule can roll back on.
    func countServerError(_ account: String) {
        guard !contents.rollouts.isEmpty else { return }
        contents.rollouts[entries[account]?.value(in: context) != nil ? account : "default"]?.counts.serverErrors.add(
            1, ordering: .relaxed)
    }

    /// Whether answers for `account` depend on the install (a rollout of the layout that serves it is under way).
    func variesOnInstall(_ account: String) -> Bool {
        guard !contents.rollouts.isEmpty else { return false }
        return contents.rollouts[entries[account]?.value(in: context) != nil ? account : "default"] != nil
    }

    /// This snapshot serving `rollout` for its account (its arms made anew), or none when `rollout` is nil or has ended.
    func serving(_ rollout: Rollout?, account: String, candidate: StoredVersion?, counts: ArmCounts?, logger: Logger) -> Snapshot {
        var contents = self.contents
        if let rollout {
            let changed = rollout.lastChangedAt.unixMillis
            contents.rolloutChangedMillis[account] = max(contents.rolloutChangedMillis[account] ?? 0, changed)
        }
        if let rollout, rollout.progress.ending == nil, let candidate, let counts {
            contents.rollouts[account] = ServedRollout(
                rollout: rollout, candidateDocument: LazyDocument(record: candidate), vary: contents.vary, counts: counts)
        } else {
            contents.rollouts[account] = nil
        }
        return Snapshot(contents, budget: budget)
    }
}
