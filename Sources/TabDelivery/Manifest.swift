/// What `…/tabs/manifest` says of a rollout (docs/rollouts.md, "Manifest mode"): all a client needs to choose its
/// arm itself with the published bucket formula, the same for every install.
public struct ManifestRollout: Sendable, Hashable, Encodable {
    /// A change the clock alone will make: the share at `at` (the last one, 100, is the completion).
    public struct ScheduledStep: Sendable, Hashable, Encodable {
        public var percent: Percent
        /// RFC 3339 with milliseconds.
        public var at: String
    }

    public var id: Int
    public var version: Int
    public var seed: String
    /// The share now.
    public var percent: Percent
    /// Installs that get the candidate whatever their bucket.
    public var installs: [String]
    /// The steps still to come, with their times; empty while paused and for a fixed share.
    public var schedule: [ScheduledStep]
}

extension Rollout {
    /// The rollout as a manifest gives it at `now`; nil once it has ended (completed or rolled back: the stable
    /// version then says it all).
    public func manifest(at now: Timestamp) -> ManifestRollout? {
        guard progress.ending == nil else { return nil }
        let status = status(at: now)
        var schedule: [ManifestRollout.ScheduledStep] = []
        if progress.pausedAt == nil {
            switch (schedule: self.schedule, state: status.state) {
            case (.fixed(let percent), .scheduled):
                schedule = [.init(percent: max(percent, progress.floor), at: startAt.rfc3339)]
            case (.steps(let steps), .scheduled):
                var at = startAt
                for step in steps {
                    schedule.append(.init(percent: max(step.percent, progress.floor), at: at.rfc3339))
                    at = at.adding(milliseconds: step.holdMillis)
                }
                schedule.append(.init(percent: .all, at: at.rfc3339))
            case (.steps(let steps), .running):
                var (step, at) = stepReached(by: now, steps)
                while step < steps.count {
                    at = at.adding(milliseconds: steps[step].holdMillis)
                    step += 1
                    schedule.append(.init(percent: step < steps.count ? max(steps[step].percent, progress.floor) : .all, at: at.rfc3339))
                }
            default: break
            }
        }
        return ManifestRollout(
            id: id, version: candidateVersion, seed: seed, percent: status.percent, installs: testers.map(\.text), schedule: schedule)
    }

    /// When the latest recorded change of this rollout was made (its newest history line, else its creation).
    public var lastChangedAt: Timestamp { history.last?.transition.at ?? createdAt }

    /// The newest moment by `now` at which this rollout's manifest changed: its latest recorded change, or the start
    /// or step the clock has reached since (a step taken by the clock alone changes the manifest too).
    public func manifestChangedAt(_ now: Timestamp) -> Timestamp {
        var newest = lastChangedAt
        guard progress.ending == nil, progress.pausedAt == nil, !(now < startAt) else { return newest }
        newest = max(newest, startAt)
        if case .steps(let steps) = schedule {
            let (_, began) = stepReached(by: now, steps)
            if !(now < began) { newest = max(newest, began) }
        }
        return newest
    }
}
