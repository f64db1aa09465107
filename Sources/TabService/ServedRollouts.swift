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

    /// The entry served in `arm` (the stable one when the candidate no longer resolves).
    func entry(in arm: RolloutArm, context: ResolutionContext) -> LayoutEntry? {
        if arm == .candidate, let entry = candidate.value(in: context) { return entry }
        return stable.value(in: context)
    }

    /// Counts one answer in `arm`.
    func count(in arm: RolloutArm) {
        if arm == .candidate {
            counts.candidate.add(1, ordering: .relaxed)
        } else {
            counts.stable.add(1, ordering: .relaxed)
        }
    }
}

/// The entry chosen to answer an install, and the rollout arm it was chosen in: the answer is counted in that arm,
/// not in one computed again later (at a step's boundary a second clock read could fall in the other).
struct ChosenEntry {
    let entry: LayoutEntry
    /// The rollout serving the account and the install's arm in it when the entry was chosen; nil when no rollout
    /// serves the account (then the answer depends on neither the install nor the time).
    let rollout: (served: ServedRollout, arm: RolloutArm)?

    /// Counts the answer in the arm the entry was chosen in (once per answer).
    func countServed() { rollout.map { $0.served.count(in: $0.arm) } }
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
    /// own, else `default`'s) the install's arm at `now`, read once, else ``entry(for:)``.
    func entry(for account: String, install: InstallID?, at now: @autoclosure () -> Timestamp) -> ChosenEntry? {
        guard !contents.rollouts.isEmpty, let served = contents.rollouts[entries[account]?.value(in: context) != nil ? account : "default"]
        else { return entry(for: account).map { ChosenEntry(entry: $0, rollout: nil) } }
        let arm = served.rollout.arm(for: install, at: now())
        return (served.entry(in: arm, context: context) ?? entry(for: account)).map { ChosenEntry(entry: $0, rollout: (served, arm)) }
    }

    /// The rollouts this snapshot and the other environments' serve.
    var everyRollout: [ServedRollout] {
        Array(contents.rollouts.values) + contents.environments.values.flatMap { $0.contents.rollouts.values }
    }

    /// Counts a 5xx answered to a client-plane request for `account` against the rollout serving it, if one is under
    /// way: `tabserver_rollout_server_errors_total`, the per-rollout signal an alert rule can roll back on.
    func countServerError(_ account: String) {
        guard !contents.rollouts.isEmpty else { return }
        contents.rollouts[entries[account]?.value(in: context) != nil ? account : "default"]?.counts.serverErrors.add(
            1, ordering: .relaxed)
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
