import TabGuard

/// Where a rollout stands at a given time.
public enum RolloutState: String, Sendable, Hashable {
    /// Created with a `startAt` still ahead: only testers get the candidate.
    case scheduled
    /// Serving the candidate to its share; steps advance by the clock.
    case running
    /// Serving the candidate to its share; the clock of its holds is stopped.
    case paused
    /// The candidate is the stable version for everyone (the environment's pointer moved to it).
    case completed
    /// Everyone gets the stable version again.
    case rolledBack
}

/// Which version an install gets during a rollout.
public enum RolloutArm: String, Sendable, Hashable {
    case candidate
    case stable
}

/// A rollout: a candidate version served to a share of one account's installs in one environment that grows by
/// its schedule, while the others keep the stable version.
///
/// The value holds the plan and the progress last recorded in the store. What it serves at time `t` is a function
/// of both (``status(at:)``, ``arm(for:at:)``), so every replica answers alike between two recordings; the
/// transitions in `Rollout+Transitions.swift` record the progress the clock made (one replica does, once) and the
/// operators' changes, each returning the events it causes.
public struct Rollout: Sendable, Hashable {
    public let id: Int
    public let account: String
    public let environment: EnvironmentName
    public let candidateVersion: Int
    /// The version the environment pointed at when the rollout started, served outside the share.
    public let stableVersion: Int
    public let schedule: RolloutSchedule
    public let seed: String
    /// Installs that get the candidate whatever their bucket.
    public let testers: [InstallID]
    public let createdAt: Timestamp
    /// When the share starts (the creation time when no `startAt` was given).
    public let startAt: Timestamp
    /// What has been recorded so far.
    public internal(set) var progress: Progress
    /// Grows by one with every recorded change: the store updates a rollout only where its revision is still the
    /// one it read, so that of replicas racing to record a step exactly one does.
    public internal(set) var revision: Int
    /// The changes recorded so far, oldest first (at most ``historyLimit``).
    public internal(set) var history: [RolloutHistoryEntry] = []
    /// What the apps' reports may do to the rollout (docs/rollouts.md, "Guarded rollouts"); nil for none.
    public internal(set) var guardRule: GuardRule? = nil

    /// The recorded progress of a rollout.
    public struct Progress: Sendable, Hashable {
        /// Whether the start (at ``Rollout/startAt``) has been recorded.
        public var started: Bool
        /// The current step (0 for a fixed percent).
        public var step: Int
        /// When the current step's hold began, moved later by the time spent paused.
        public var stepBegan: Timestamp
        /// The lowest percent an operator raised the share to (`PATCH`); a fixed rollout's percent.
        public var floor: Percent
        /// Since when the rollout is paused, nil while it is not.
        public var pausedAt: Timestamp?
        /// How it ended, nil while under way.
        public var ending: Ending?
    }

    /// How a rollout ended.
    public enum Ending: Sendable, Hashable {
        case completed(at: Timestamp)
        case rolledBack(at: Timestamp, reason: String?)
    }

    /// Where the rollout stands at one time.
    public struct Status: Sendable, Hashable {
        public var state: RolloutState
        /// The share of installs (outside testers) that get the candidate.
        public var percent: Percent
        /// The current step for a stepped rollout that is running or paused; nil otherwise.
        public var step: Int?
        /// When the share changes next by the clock: the start of a scheduled rollout, the end of a running step's
        /// hold; nil when paused, fixed or ended.
        public var nextChangeAt: Timestamp?
        /// When the rollout ended, or would have by the clock (the last hold's end), for an ended one.
        public var endedAt: Timestamp?
    }

    /// Where the rollout stands at `now`, from its recorded progress and the clock: the share served between two
    /// recordings, and exactly what ``advanced(to:)`` would record.
    public func status(at now: Timestamp) -> Status {
        switch progress.ending {
        case .completed(let at): return Status(state: .completed, percent: .all, endedAt: at)
        case .rolledBack(let at, _): return Status(state: .rolledBack, percent: .zero, endedAt: at)
        case nil: break
        }
        let clock = progress.pausedAt ?? now
        if clock < startAt { return Status(state: .scheduled, percent: .zero, nextChangeAt: startAt) }
        let paused = progress.pausedAt != nil
        let state: RolloutState = paused ? .paused : .running
        switch schedule {
        case .fixed:
            return Status(state: state, percent: progress.floor)
        case .steps(let steps):
            let (step, began) = stepReached(by: clock, steps)
            if step == steps.count { return Status(state: .completed, percent: .all, endedAt: began) }
            let percent = max(steps[step].percent, progress.floor)
            let next = paused ? nil : began.adding(milliseconds: steps[step].holdMillis)
            return Status(state: state, percent: percent, step: step, nextChangeAt: next)
        }
    }

    /// The step the clock has reached from the recorded one and when it began (`steps.count` once the last hold
    /// has ended, with the time it ended).
    func stepReached(by clock: Timestamp, _ steps: [RolloutStep]) -> (step: Int, began: Timestamp) {
        var step = progress.step
        var began = progress.stepBegan
        while step < steps.count, clock.milliseconds(since: began) >= steps[step].holdMillis {
            began = began.adding(milliseconds: steps[step].holdMillis)
            step += 1
        }
        return (step, began)
    }

    /// Whether the rollout is scheduled, running or paused at `now`: the environment's pointer may not move then.
    public func isUnderWay(at now: Timestamp) -> Bool {
        switch status(at: now).state {
        case .scheduled, .running, .paused: true
        case .completed, .rolledBack: false
        }
    }

    /// Refuses a decision about the environment's pointer while this rollout's completion is due but not recorded:
    /// the pointer read is stale then (it is about to move to the candidate).
    /// - Throws: ``RolloutError/Conflict/completionNotRecorded(id:)`` (409).
    public func requireCompletionRecorded(at now: Timestamp) throws(RolloutError) {
        if progress.ending == nil, status(at: now).state == .completed { throw .conflict(.completionNotRecorded(id: id)) }
    }

    /// Which arm an install gets at `now`: testers the candidate while the rollout is under way, an install whose
    /// bucket is below the share's percent the candidate, every other install and a request without an install id
    /// the stable version; everyone the candidate once completed and the stable version once rolled back.
    public func arm(for install: InstallID?, at now: Timestamp) -> RolloutArm {
        let status = status(at: now)
        switch status.state {
        case .completed: return .candidate
        case .rolledBack: return .stable
        case .scheduled, .running, .paused: break
        }
        guard let install else { return .stable }
        if testers.contains(install) { return .candidate }
        return status.percent.covers(bucket: install.bucket(seed: seed)) ? .candidate : .stable
    }

    /// The version an install gets at `now` (the answer's `version`).
    public func version(for install: InstallID?, at now: Timestamp) -> Int {
        arm(for: install, at: now) == .candidate ? candidateVersion : stableVersion
    }

    /// The default seed: `{account}:{environment}:{rollout id}`.
    public static func defaultSeed(account: String, environment: EnvironmentName, id: Int) -> String {
        "\(account):\(environment.text):\(id)"
    }
}
