import Foundation
import TabGuard
import TabJSON

/// Answers per arm since a rollout's start, summed over replicas (counted by the service, not here).
public struct ServedCounts: Sendable, Hashable, Encodable {
    public var candidate: Int
    public var stable: Int

    public init(candidate: Int, stable: Int) {
        self.candidate = candidate
        self.stable = stable
    }
}

/// The body of `GET …/layout/rollout` (docs/rollouts.md): `{"id", "environment", "version", "stableVersion",
/// "percent", "steps", "step", "nextStepAt", "state", "seed", "startedAt", "served"}`, plus `"reason"` once rolled
/// back with one, and `"history"`: every recorded change, oldest first. A fixed-percent rollout has `"steps": []`;
/// `step` and `nextStepAt` are `null` when there is none.
public struct RolloutDocument: Sendable, Hashable, Encodable {
    public var id: Int
    public var environment: String
    public var version: Int
    public var stableVersion: Int
    public var percent: Percent
    public var steps: [RolloutStep]
    @NullWhenAbsent public var step: Int?
    /// RFC 3339: when the share changes next by the clock.
    @NullWhenAbsent public var nextStepAt: String?
    public var state: RolloutState
    public var seed: String
    /// RFC 3339: when the share began, or begins for a scheduled rollout.
    public var startedAt: String
    public var served: ServedCounts
    public var reason: String?
    public var history: [HistoryLine]
    /// The rollout's guard; `null` when it has none.
    @NullWhenAbsent public var guardRule: GuardDocument?
    /// What each arm's installs reported; nil where the caller did not read it.
    public var health: HealthDocument?

    /// One recorded change: `{"at", "author", "change", "state", "percent", "message"}`, plus `"step"` for a
    /// change within a stepped rollout (as the document's) and `"reason"` for a rollback with one.
    public struct HistoryLine: Sendable, Hashable, Encodable {
        public var at: String
        public var author: String
        public var change: String
        public var state: RolloutState
        public var percent: Percent
        public var step: Int?
        public var message: String
        public var reason: String?
    }

    private enum CodingKeys: String, CodingKey {
        case id, environment, version, stableVersion, percent, steps, step, nextStepAt, state, seed, startedAt, served, reason, history
        case guardRule = "guard"
        case health
    }

    /// The document as JSON, keys sorted.
    public var json: [UInt8] { RolloutJSON.encode(self) }
}

/// The data of an `event: rollout` in `/v1/events`: `{"account", "environment", "rollout", "version", "percent",
/// "state", "author", "at"}` (`version` is the candidate's).
public struct RolloutEvent: Sendable, Hashable, Encodable {
    public var account: String
    public var environment: String
    public var rollout: Int
    public var version: Int
    public var percent: Percent
    public var state: RolloutState
    public var author: String
    public var at: String

    /// The event as JSON, keys sorted.
    public var json: [UInt8] { RolloutJSON.encode(self) }
}

extension Rollout {
    /// The document `GET …/layout/rollout` answers at `now`.
    public func document(at now: Timestamp, served: ServedCounts, health: HealthDocument? = nil) -> RolloutDocument {
        let status = status(at: now)
        let steps: [RolloutStep]
        switch schedule {
        case .steps(let list): steps = list
        case .fixed: steps = []
        }
        var reason: String?
        if case .rolledBack(_, let why) = progress.ending { reason = why }
        return RolloutDocument(
            id: id, environment: environment.text, version: candidateVersion, stableVersion: stableVersion, percent: status.percent,
            steps: steps, step: status.step, nextStepAt: status.nextChangeAt?.rfc3339, state: status.state, seed: seed,
            startedAt: startAt.rfc3339, served: served, reason: reason,
            history: history.map { line in
                let transition = line.transition
                return RolloutDocument.HistoryLine(
                    at: transition.at.rfc3339, author: line.author, change: transition.kind.rawValue, state: transition.state,
                    percent: transition.percent, step: transition.step, message: message(for: transition), reason: transition.reason)
            }, guardRule: guardRule.map(GuardDocument.init), health: health)
    }

    /// The change-feed event of one of this rollout's transitions.
    /// - Parameter author: who made the change (the token's name; for the clock's changes, whoever the service names).
    public func event(for transition: RolloutTransition, author: String) -> RolloutEvent {
        RolloutEvent(
            account: account, environment: environment.text, rollout: id, version: candidateVersion, percent: transition.percent,
            state: transition.state, author: author, at: transition.at.rfc3339)
    }
}

extension Rollout {
    /// The history message of one of this rollout's transitions: `rollout 1 of version 5: step 2, 25%`.
    public func message(for transition: RolloutTransition) -> String {
        let subject = "rollout \(id) of version \(candidateVersion)"
        let share = "\(transition.percent)%"
        let step = transition.step.map { "step \($0 + 1), " } ?? ""
        switch transition.kind {
        case .scheduled: return "\(subject): scheduled for \(startAt.rfc3339)"
        case .started: return "\(subject): started, \(step)\(share)"
        case .stepped: return "\(subject): \(step)\(share)"
        case .raised: return "\(subject): raised to \(step)\(share)"
        case .paused: return "\(subject): paused at \(share)"
        case .resumed: return "\(subject): resumed at \(share)"
        case .completed: return "\(subject): completed, version \(candidateVersion) is stable for everyone"
        case .rolledBack:
            return "\(subject): rolled back to version \(stableVersion)" + (transition.reason.map { ": \($0)" } ?? "")
        }
    }
}

extension Percent: Encodable {
    /// A whole percent as an integer (`5`), any other as a decimal (`0.5`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if basisPoints % 100 == 0 {
            try container.encode(basisPoints / 100)
        } else {
            // `description` is always digits with one decimal point ("0.5", "12.25"), which Decimal reads.
            try container.encode(Decimal(string: description)!)
        }
    }
}

extension RolloutState: Encodable {}

extension RolloutStep: Encodable {
    private enum Key: String, CodingKey { case percent, hold }

    /// `{"percent": 5, "hold": "PT10M"}`, the hold as it was written.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(percent, forKey: .percent)
        try container.encode(hold.text, forKey: .hold)
    }
}

enum RolloutJSON {
    static func encode(_ value: some Encodable) -> [UInt8] {
        // Safety of try!: every value here is made of strings, integers, decimals and arrays of them.
        return Array(try! JSONEncoder.sorted.encode(value))
    }
}

/// A rollout's `"guard"`: `{"kind", "maxRatio"?, "maxRate"?, "minInstalls", "minFailures", "action"}`, as answers
/// and the stored record (``Rollout/record``) both write it.
public struct GuardDocument: Sendable, Hashable, Codable {
    public var kind: String
    public var maxRatio: Double?
    public var maxRate: Double?
    public var minInstalls: Int
    public var minFailures: Int
    public var action: String

    public init(_ rule: GuardRule) {
        kind = rule.kind.rawValue
        maxRatio = rule.maxRatio
        maxRate = rule.maxRate
        minInstalls = rule.minInstalls
        minFailures = rule.minFailures
        action = rule.action.rawValue
    }

    /// The rule, or nil when it names a kind or action this build does not know.
    var rule: GuardRule? {
        guard let kind = GuardRule.Kind(rawValue: kind), let action = GuardRule.Action(rawValue: action) else { return nil }
        return GuardRule(
            kind: kind, maxRatio: maxRatio, maxRate: maxRate, minInstalls: minInstalls, minFailures: minFailures, action: action)
    }
}

/// `"health"`: each arm's reporting installs, failing installs, installs per kind and per failing tab
/// (`{"candidate"|"stable"|"testers": {"installs", "failed", "byKind", "byTab"}}`, or `{"version": …}` outside a
/// rollout).
public struct HealthDocument: Sendable, Hashable, Encodable {
    public var arms: [String: Arm]

    public struct Arm: Sendable, Hashable, Encodable {
        public var installs: Int
        public var failed: Int
        public var byKind: [String: Int]
        public var byTab: [String: Int]

        public init(_ health: ArmHealth) {
            installs = health.installs
            failed = health.failed
            byKind = Dictionary(uniqueKeysWithValues: health.byKind.map { ($0.key.rawValue, $0.value) })
            byTab = health.byTab
        }
    }

    public init(arms: [String: ArmHealth]) {
        self.arms = arms.mapValues(Arm.init)
    }

    public func encode(to encoder: any Encoder) throws {
        try arms.encode(to: encoder)
    }

    /// The document as JSON, keys sorted.
    public var json: [UInt8] { RolloutJSON.encode(self) }
}
