import Foundation
import TabGuard

extension Rollout {
    /// The rollout as the store keeps it: one JSON document holding the plan and the recorded progress (times in
    /// Unix milliseconds), read back by ``init(record:)``. The store keeps beside it the columns it queries by
    /// (account, environment, id, ``revision``) and updates it only where the revision is the one it read.
    public var record: [UInt8] { RolloutJSON.encode(StoredRollout(self)) }

    /// A rollout from its ``record``; nil when the bytes are not one (a damaged row).
    public init?(record: [UInt8]) {
        guard let stored = try? JSONDecoder().decode(StoredRollout.self, from: Data(record)), let rollout = stored.rollout else {
            return nil
        }
        self = rollout
    }
}

/// The stored form of a ``Rollout``, version 1: its keys written sorted (``RolloutJSON``), times in Unix
/// milliseconds, percents in basis points (0–10,000). Records written by earlier releases lack the fields added since;
/// each such field is optional and says what its absence reads as.
private struct StoredRollout: Codable {
    /// One step of a stepped schedule: its percent in basis points and its hold, an ISO 8601 duration (`PT10M`).
    struct Step: Codable {
        var basisPoints: Int
        var hold: String
    }

    /// The record's layout: always 1; a record of another is not read (a later release wrote it).
    var format = 1
    var id: Int
    /// The account, and the environment by name (an ``EnvironmentName``'s text).
    var account, environment: String
    /// The version the share gets, and the one the others keep (and all get back after a rollback).
    var candidateVersion, stableVersion: Int
    /// The schedule: exactly one of the two is present, the steps or the fixed percent; both or neither is no rollout.
    var steps: [Step]?
    var fixedBasisPoints: Int?
    /// Hashed with an install's id to place it in or out of the share.
    var seed: String
    /// Install ids, as sent, that get the candidate whatever their bucket.
    var testers: [String]
    /// Unix milliseconds: when the rollout was created, and when its share starts.
    var createdAt, startAt: Int64
    /// Whether the start has been recorded (false while `startAt` is ahead).
    var started: Bool
    /// The index of the current step in `steps`; 0 for a fixed percent.
    var step: Int
    /// Unix milliseconds: when the current step's hold began (moved later by the time spent paused).
    var stepBegan: Int64
    /// Basis points: the lowest percent an operator raised the share to; a fixed rollout's percent.
    var floorBasisPoints: Int
    /// Unix milliseconds, nil when it did not happen: since when the rollout is paused, and how it ended (completed or
    /// rolled back; at most one of the two).
    var pausedAt, completedAt, rolledBackAt: Int64?
    /// Why it was rolled back, nil when no reason was given (or it was not rolled back).
    var reason: String?
    /// ``Rollout/revision``: one more with every recorded change.
    var revision: Int
    /// Absent in records written before the history was kept (they read as an empty history).
    var history: [Entry]?
    /// Absent in records without a guard (and in all written before guards).
    /// The API document's form (``GuardDocument``), by names.
    var guardRule: GuardDocument?

    /// A ``RolloutHistoryEntry``: the transition's kind and state by name, its percent in basis points.
    struct Entry: Codable {
        /// The ``RolloutTransition/Kind`` and the ``RolloutState`` right after it, by raw value.
        var kind, state: String
        /// Unix milliseconds: when it happened (for the clock's changes, when they were due).
        var at: Int64
        /// The share right after it.
        var basisPoints: Int
        /// The step it reached, and why the rollout was rolled back; nil where the transition has none.
        var step: Int?
        var reason: String?
        /// The token's name (the service's for the clock's changes), and the ``Rollout/revision`` that recorded it.
        var author: String
        var revision: Int

        init(_ entry: RolloutHistoryEntry) {
            let transition = entry.transition
            kind = transition.kind.rawValue
            at = transition.at.unixMillis
            state = transition.state.rawValue
            basisPoints = transition.percent.basisPoints
            step = transition.step
            reason = transition.reason
            author = entry.author
            revision = entry.revision
        }

        /// The line, or nil when it names a kind or state this build does not know (a newer release wrote it).
        var entry: RolloutHistoryEntry? {
            guard let kind = RolloutTransition.Kind(rawValue: kind), let state = RolloutState(rawValue: state),
                let percent = Percent(basisPoints: basisPoints)
            else { return nil }
            let transition = RolloutTransition(
                kind: kind, at: Timestamp(unixMillis: at), state: state, percent: percent, step: step, reason: reason)
            return RolloutHistoryEntry(transition: transition, author: author, revision: revision)
        }
    }

    init(_ rollout: Rollout) {
        id = rollout.id
        account = rollout.account
        environment = rollout.environment.text
        candidateVersion = rollout.candidateVersion
        stableVersion = rollout.stableVersion
        switch rollout.schedule {
        case .steps(let list): steps = list.map { Step(basisPoints: $0.percent.basisPoints, hold: $0.hold.text) }
        case .fixed(let percent): fixedBasisPoints = percent.basisPoints
        }
        seed = rollout.seed
        testers = rollout.testers.map(\.text)
        createdAt = rollout.createdAt.unixMillis
        startAt = rollout.startAt.unixMillis
        let progress = rollout.progress
        started = progress.started
        step = progress.step
        stepBegan = progress.stepBegan.unixMillis
        floorBasisPoints = progress.floor.basisPoints
        pausedAt = progress.pausedAt?.unixMillis
        switch progress.ending {
        case .completed(let at): completedAt = at.unixMillis
        case .rolledBack(let at, let why):
            rolledBackAt = at.unixMillis
            reason = why
        case nil: break
        }
        revision = rollout.revision
        history = rollout.history.map(Entry.init)
        guardRule = rollout.guardRule.map(GuardDocument.init)
    }

    /// The rollout, or nil when a field holds what no rollout can.
    var rollout: Rollout? {
        guard format == 1, let environment = EnvironmentName(environment), let floor = Percent(basisPoints: floorBasisPoints) else {
            return nil
        }
        let schedule: RolloutSchedule
        switch (steps, fixedBasisPoints) {
        case (let list?, nil):
            var parsed: [RolloutStep] = []
            for item in list {
                guard let percent = Percent(basisPoints: item.basisPoints), let hold = try? ISODuration(item.hold) else { return nil }
                parsed.append(RolloutStep(percent: percent, hold: hold))
            }
            guard !parsed.isEmpty, step < parsed.count else { return nil }
            schedule = .steps(parsed)
        case (nil, let basisPoints?):
            guard let percent = Percent(basisPoints: basisPoints) else { return nil }
            schedule = .fixed(percent)
        default:
            return nil
        }
        var testerIDs: [InstallID] = []
        for text in testers {
            guard let id = try? InstallID(text) else { return nil }
            testerIDs.append(id)
        }
        let ending: Rollout.Ending?
        switch (completedAt, rolledBackAt) {
        case (nil, nil): ending = nil
        case (let at?, nil): ending = .completed(at: Timestamp(unixMillis: at))
        case (nil, let at?): ending = .rolledBack(at: Timestamp(unixMillis: at), reason: reason)
        default: return nil
        }
        // A guard this build cannot read is no reason to stop serving the rollout; it is not applied here.
        let rule = guardRule?.rule
        let progress = Rollout.Progress(
            started: started, step: step, stepBegan: Timestamp(unixMillis: stepBegan), floor: floor,
            pausedAt: pausedAt.map(Timestamp.init(unixMillis:)), ending: ending)
        return Rollout(
            id: id, account: account, environment: environment, candidateVersion: candidateVersion, stableVersion: stableVersion,
            schedule: schedule, seed: seed, testers: testerIDs, createdAt: Timestamp(unixMillis: createdAt),
            startAt: Timestamp(unixMillis: startAt), progress: progress, revision: revision,
            history: (history ?? []).compactMap(\.entry), guardRule: rule)
    }
}
