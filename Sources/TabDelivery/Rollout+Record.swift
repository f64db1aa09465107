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

/// The stored form of a ``Rollout``, version 1.
private struct StoredRollout: Codable {
    struct Step: Codable {
        var basisPoints: Int
        var hold: String
    }

    var format = 1
    var id: Int
    var account: String
    var environment: String
    var candidateVersion: Int
    var stableVersion: Int
    var steps: [Step]?
    var fixedBasisPoints: Int?
    var seed: String
    var testers: [String]
    var createdAt: Int64
    var startAt: Int64
    var started: Bool
    var step: Int
    var stepBegan: Int64
    var floorBasisPoints: Int
    var pausedAt: Int64?
    var completedAt: Int64?
    var rolledBackAt: Int64?
    var reason: String?
    var revision: Int
    /// Absent in records written before the history was kept (they read as an empty history).
    var history: [Entry]?
    /// Absent in records without a guard (and in all written before guards).
    /// The API document's form (``GuardDocument``), by names.
    var guardRule: GuardDocument?

    /// A ``RolloutHistoryEntry``: the transition's kind and state by name, its percent in basis points.
    struct Entry: Codable {
        var kind: String
        var at: Int64
        var state: String
        var basisPoints: Int
        var step: Int?
        var reason: String?
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
