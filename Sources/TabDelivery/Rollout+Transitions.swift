import TabGuard
import TabJSON

/// One recorded change of a rollout: a line in history and an `event: rollout` in the change feed.
public struct RolloutTransition: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// Created with a `startAt` ahead.
        case scheduled
        /// The share began (at creation, or at `startAt` by the clock).
        case started
        /// The clock ended a step's hold and the next step began.
        case stepped
        /// An operator raised the percent (`PATCH {"percent"}`).
        case raised
        case paused
        case resumed
        case completed
        case rolledBack
    }

    public var kind: Kind
    /// When it happened: for the clock's changes the time they were due, not the time they were recorded.
    public var at: Timestamp
    /// The rollout's state and share right after it.
    public var state: RolloutState
    public var percent: Percent
    public var step: Int?
    /// Why a rollout was rolled back, when given.
    public var reason: String?
}

/// The result of a transition: the rollout to record (where its ``Rollout/revision`` is still the one read), the
/// changes to put in history and events, in order, and where the environment's pointer moves, if it does.
public struct RolloutChange: Sendable, Hashable {
    public var rollout: Rollout
    /// Empty when there is nothing to record.
    public var transitions: [RolloutTransition]
    /// The version the environment's pointer moves to (the candidate, on completion); nil when it stays.
    public var pointerMovesTo: Int?
}

/// Whether a version can be rolled out, as the store knows it.
public enum VersionAvailability: Sendable, Hashable {
    case available
    /// The account's layout was deleted at that version.
    case deleted
    case missing
}

/// What starting a rollout depends on, read from the store in the transaction that records it.
public struct RolloutStartContext: Sendable {
    public var account: String
    public var environment: EnvironmentName
    /// The id the store gives the new rollout (part of the default seed).
    public var id: Int
    /// The environment's pointer for the account: the stable version.
    public var current: Pointer?
    /// The account's latest rollout in the environment, if any (one may be under way), as recorded; a completion
    /// due but unrecorded refuses the decision (409), since `current` is about to move.
    public var latest: Rollout?
    public var precondition: Precondition
    public var now: Timestamp
    /// Whether each version exists (the candidate is looked up here).
    public var availability: @Sendable (Int) -> VersionAvailability

    public init(
        account: String, environment: EnvironmentName, id: Int, current: Pointer?, latest: Rollout?, precondition: Precondition,
        now: Timestamp, availability: @escaping @Sendable (Int) -> VersionAvailability
    ) {
        self.account = account
        self.environment = environment
        self.id = id
        self.current = current
        self.latest = latest
        self.precondition = precondition
        self.now = now
        self.availability = availability
    }
}

extension Rollout {
    /// Starts a rollout of `plan` (`POST …/layout/rollout`, or a gradual promotion with the candidate `from` has).
    ///
    /// Checked in this order: the precondition against the environment's pointer (428/412); a pointer to serve
    /// outside the share and no rollout under way (409); the candidate exists, was not deleted and is not the
    /// stable version already (422 at `/version`).
    /// - Parameters:
    ///   - candidate: the version to roll out when the plan does not name it (a promotion); a plan that names a
    ///     different one is refused.
    ///   - versionPointer: where the candidate was named, for the 422 (`/version`, or `/rollout/version`).
    /// - Throws: ``RolloutError``.
    public static func start(
        _ plan: RolloutPlan, candidate: Int? = nil, versionPointer: String = "/version", in context: RolloutStartContext
    ) throws(RolloutError) -> RolloutChange {
        try context.latest?.requireCompletionRecorded(at: context.now)
        try context.precondition.check(current: context.current?.etag)
        guard let stable = context.current else {
            throw .conflict(.noStableVersion(account: context.account, environment: context.environment.text))
        }
        if let latest = context.latest, latest.isUnderWay(at: context.now) {
            throw .conflict(.rolloutInProgress(id: latest.id, environment: context.environment.text))
        }
        let named = plan.version ?? candidate
        guard let version = named else { throw .invalidBody([FieldError(pointer: versionPointer, message: "is required")]) }
        if let candidate, version != candidate {
            throw .invalidBody([
                FieldError(
                    pointer: versionPointer, message: "the promotion rolls out version \(candidate), the one it promotes; leave version out"
                )
            ])
        }
        switch context.availability(version) {
        case .missing:
            throw .invalidBody([FieldError(pointer: versionPointer, message: "'\(context.account)' has no version \(version)")])
        case .deleted:
            throw .invalidBody([FieldError(pointer: versionPointer, message: "version \(version) records the deletion of the layout")])
        case .available: break
        }
        if version == stable.version {
            throw .invalidBody([
                FieldError(pointer: versionPointer, message: "version \(version) is what \(context.environment.text) serves already")
            ])
        }
        let now = context.now
        let startAt = max(plan.startAt ?? now, now)
        let started = startAt <= now
        let floor: Percent
        switch plan.schedule {
        case .fixed(let percent): floor = percent
        case .steps: floor = .zero
        }
        let rollout = Rollout(
            id: context.id, account: context.account, environment: context.environment, candidateVersion: version,
            stableVersion: stable.version, schedule: plan.schedule,
            seed: plan.seed ?? defaultSeed(account: context.account, environment: context.environment, id: context.id),
            testers: plan.installs, createdAt: now, startAt: startAt,
            progress: Progress(started: started, step: 0, stepBegan: startAt, floor: floor, pausedAt: nil, ending: nil), revision: 1,
            guardRule: plan.guardRule)
        let status = rollout.status(at: now)
        let first = RolloutTransition(
            kind: started ? .started : .scheduled, at: now, state: status.state, percent: status.percent, step: status.step)
        return RolloutChange(rollout: rollout, transitions: [first], pointerMovesTo: nil)
    }

    /// Records what the clock did up to `now`: the start at `startAt`, each step whose predecessor's hold ended,
    /// and the completion when the last hold ended, each with the time it was due. Nothing when nothing was due
    /// (so of two replicas that both try, the second finds nothing to record).
    public func advanced(to now: Timestamp) -> RolloutChange {
        var next = self
        var transitions: [RolloutTransition] = []
        var pointer: Int?
        guard progress.ending == nil, progress.pausedAt == nil, now >= startAt else {
            return RolloutChange(rollout: self, transitions: [], pointerMovesTo: nil)
        }
        if !progress.started {
            next.progress.started = true
            let status = next.status(at: startAt)
            transitions.append(RolloutTransition(kind: .started, at: startAt, state: .running, percent: status.percent, step: status.step))
        }
        if case .steps(let steps) = schedule {
            while next.progress.step < steps.count {
                let ends = next.progress.stepBegan.adding(milliseconds: steps[next.progress.step].holdMillis)
                guard now >= ends else { break }
                if next.progress.step + 1 == steps.count {
                    next.progress.ending = .completed(at: ends)
                    pointer = candidateVersion
                    transitions.append(RolloutTransition(kind: .completed, at: ends, state: .completed, percent: .all, step: nil))
                    break
                }
                next.progress.step += 1
                next.progress.stepBegan = ends
                let percent = max(steps[next.progress.step].percent, next.progress.floor)
                transitions.append(RolloutTransition(kind: .stepped, at: ends, state: .running, percent: percent, step: next.progress.step))
            }
        }
        if !transitions.isEmpty { next.revision += 1 }
        return RolloutChange(rollout: next, transitions: transitions, pointerMovesTo: pointer)
    }

    /// Applies `PATCH …/rollout` at `now`, after recording what the clock did: resume (`"paused": false`), raise the
    /// percent, pause (`"paused": true`), in that order. Raising to a step's percent or beyond moves to the last
    /// step at or below it, whose hold starts then; a percent between steps stays the floor until a step passes it.
    /// Asking for the state the rollout is in already changes nothing.
    /// - Throws: ``RolloutError/Conflict/percentDownward(current:requested:)``,
    ///   ``RolloutError/Conflict/rolloutEnded(id:state:)``, ``RolloutError/Conflict/rolloutNotStarted(id:)`` (409).
    public func patched(_ patch: RolloutPatch, at now: Timestamp) throws(RolloutError) -> RolloutChange {
        var change = advanced(to: now)
        var next = change.rollout
        let status = next.status(at: now)
        switch status.state {
        case .completed, .rolledBack: throw .conflict(.rolloutEnded(id: id, state: status.state))
        case .scheduled: throw .conflict(.rolloutNotStarted(id: id))
        case .running, .paused: break
        }
        var transitions: [RolloutTransition] = []
        if patch.paused == false, let pausedAt = next.progress.pausedAt {
            next.progress.stepBegan = next.progress.stepBegan.adding(milliseconds: now.milliseconds(since: pausedAt))
            next.progress.pausedAt = nil
            transitions.append(next.transition(.resumed, at: now))
        }
        if let percent = patch.percent {
            let current = next.status(at: now).percent
            if percent < current { throw .conflict(.percentDownward(current: current, requested: percent)) }
            if percent > current {
                next.progress.floor = percent
                if case .steps(let steps) = schedule, let reached = steps.lastIndex(where: { $0.percent <= percent }),
                    reached > next.progress.step
                {
                    next.progress.step = reached
                    next.progress.stepBegan = next.progress.pausedAt ?? now
                }
                transitions.append(next.transition(.raised, at: now))
            }
        }
        if patch.paused == true, next.progress.pausedAt == nil {
            next.progress.pausedAt = now
            transitions.append(next.transition(.paused, at: now))
        }
        var guardChanged = false
        if let rule = patch.guardRule, rule != next.guardRule {
            next.guardRule = rule
            guardChanged = true
        }
        if !transitions.isEmpty || guardChanged { next.revision += 1 }
        change.rollout = next
        change.transitions += transitions
        return change
    }

    /// Completes the rollout at `now` (`POST …/rollout/complete`): the candidate becomes the stable version for
    /// everyone, and the environment's pointer moves to it.
    /// - Throws: ``RolloutError/Conflict/rolloutEnded(id:state:)`` when it had ended before `now` (a completion the
    ///   clock made due but nobody recorded yet is recorded and returned).
    public func completed(at now: Timestamp) throws(RolloutError) -> RolloutChange {
        if let ending = progress.ending { throw .conflict(.rolloutEnded(id: id, state: ending.state)) }
        var change = advanced(to: now)
        if change.rollout.progress.ending != nil { return change }
        change.rollout.progress.ending = .completed(at: now)
        change.rollout.revision += 1
        change.transitions.append(RolloutTransition(kind: .completed, at: now, state: .completed, percent: .all, step: nil))
        change.pointerMovesTo = candidateVersion
        return change
    }

    /// Rolls the rollout back at `now` (`POST …/rollout/rollback`, or a firing alert): everyone gets the stable
    /// version at once; the pointer stays.
    /// - Parameter reason: recorded with the change (`{"reason"}`, or the alert's name and summary).
    /// - Throws: ``RolloutError/Conflict/rolloutEnded(id:state:)`` when it had ended by `now`.
    public func rolledBack(reason: String?, at now: Timestamp) throws(RolloutError) -> RolloutChange {
        var change = advanced(to: now)
        if let ending = change.rollout.progress.ending { throw .conflict(.rolloutEnded(id: id, state: ending.state)) }
        change.rollout.progress.ending = .rolledBack(at: now, reason: reason)
        change.rollout.revision += 1
        change.transitions.append(
            RolloutTransition(kind: .rolledBack, at: now, state: .rolledBack, percent: .zero, step: nil, reason: reason))
        return change
    }

    private func transition(_ kind: RolloutTransition.Kind, at now: Timestamp) -> RolloutTransition {
        let status = status(at: now)
        return RolloutTransition(kind: kind, at: now, state: status.state, percent: status.percent, step: status.step)
    }
}

extension Rollout.Ending {
    /// The state this ending leaves the rollout in.
    public var state: RolloutState {
        switch self {
        case .completed: .completed
        case .rolledBack: .rolledBack
        }
    }
}

/// `PATCH …/layout/rollout`: `{"percent": p}` (upward only), `{"paused": true|false}`, or both.
public struct RolloutPatch: Sendable, Hashable {
    public var percent: Percent?
    public var paused: Bool?
    /// `{"guard": {…}}` sets the guard, `{"guard": null}` removes it (`.some(nil)`); nil leaves it.
    public var guardRule: GuardRule??

    public init(percent: Percent? = nil, paused: Bool? = nil, guardRule: GuardRule?? = nil) {
        self.percent = percent
        self.paused = paused
        self.guardRule = guardRule
    }

    /// Reads the body.
    /// - Throws: ``RolloutError/invalidBody(_:)`` (422) for unknown members, bad values or neither member.
    public static func decode(_ body: [UInt8]) throws(RolloutError) -> RolloutPatch {
        let object = try BodyReader.object(body, limit: 64 * 1024)
        var reader = BodyReader()
        reader.refuseUnknown(object, known: ["percent", "paused", "guard"], at: "")
        var patch = RolloutPatch()
        if let value = object["percent"] { patch.percent = reader.percent(value, at: "/percent") }
        if let value = object["paused"] { patch.paused = reader.bool(value, at: "/paused") }
        switch object["guard"] {
        case nil: break
        case .null?: patch.guardRule = .some(nil)
        case let value?: if let rule = GuardRule.read(value, at: "/guard", &reader) { patch.guardRule = .some(rule) }
        }
        if object["percent"] == nil, object["paused"] == nil, object["guard"] == nil {
            reader.fail("", "give \"percent\" (upward only), \"paused\" or \"guard\"")
        }
        try reader.finish()
        return patch
    }
}

/// `POST …/rollout/rollback`'s optional body: `{"reason": "…"}` (an empty body is fine).
public enum RollbackRequest {
    public static let maximumReasonLength = 1024

    /// The reason given, nil when none.
    /// - Throws: ``RolloutError/invalidBody(_:)`` (422).
    public static func reason(from body: [UInt8]) throws(RolloutError) -> String? {
        let object = try BodyReader.object(body, limit: 64 * 1024, emptyIsObject: true)
        var reader = BodyReader()
        reader.refuseUnknown(object, known: ["reason"], at: "")
        let reason = object["reason"].flatMap { reader.string($0, at: "/reason", maximumLength: maximumReasonLength) }
        try reader.finish()
        return reason
    }
}
