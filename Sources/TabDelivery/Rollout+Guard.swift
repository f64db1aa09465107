import TabGuard
import TabJSON

extension GuardRule {
    static let knownMembers: Set<String> = ["kind", "maxRatio", "maxRate", "minInstalls", "minFailures", "action"]

    /// Reads a rollout's `"guard"` (`POST …/layout/rollout`, `PATCH …/rollout`); nil when a problem was recorded.
    static func read(_ value: JSONValue, at base: String, _ reader: inout BodyReader) -> GuardRule? {
        guard case .object(let object) = value else {
            reader.fail(
                base,
                "must be an object {\"kind\", \"maxRatio\"?, \"maxRate\"?, \"minInstalls\"?, \"minFailures\"?, \"action\"?}, not \(value.kind)"
            )
            return nil
        }
        let before = reader.problems.count
        reader.refuseUnknown(object, known: knownMembers, at: base)
        let kind = reader.oneOf(Kind.self, object, "kind", at: base)
        if object["kind"] == nil { reader.fail(base, "\"kind\" is required (tabFailed, reverted, refused or failures)") }
        let maxRatio = object["maxRatio"].flatMap { number($0, at: BodyReader.pointer(base, "maxRatio"), upTo: 1_000_000, &reader) }
        let maxRate = object["maxRate"].flatMap { number($0, at: BodyReader.pointer(base, "maxRate"), upTo: 1, &reader) }
        if object["maxRatio"] == nil, object["maxRate"] == nil {
            reader.fail(base, "give \"maxRatio\" (times the stable arm's share), \"maxRate\" (a share from 0 to 1), or both")
        }
        let minInstalls = object["minInstalls"].flatMap { count($0, at: BodyReader.pointer(base, "minInstalls"), &reader) }
        let minFailures = object["minFailures"].flatMap { count($0, at: BodyReader.pointer(base, "minFailures"), &reader) }
        var action = Action.pause
        if let value = object["action"] {
            let pointer = BodyReader.pointer(base, "action")
            if let text = reader.string(value, at: pointer, maximumLength: 32) {
                if let named = Action(rawValue: text) {
                    action = named
                } else {
                    reader.fail(pointer, "must be \"pause\" or \"rollback\", not '\(text)'")
                }
            }
        }
        guard reader.problems.count == before, let kind else { return nil }
        return GuardRule(
            kind: kind, maxRatio: maxRatio, maxRate: maxRate, minInstalls: minInstalls ?? defaultMinInstalls,
            minFailures: minFailures ?? defaultMinFailures, action: action)
    }

    private static func number(_ value: JSONValue, at pointer: String, upTo limit: Double, _ reader: inout BodyReader) -> Double? {
        let bound = limit == 1 ? "1" : "1000000"
        let read: Double
        switch value {
        case .integer(let whole): read = Double(whole)
        case .real(let real): read = real
        default:
            reader.fail(pointer, "must be a number from 0 to \(bound), not \(value.kind)")
            return nil
        }
        guard read.isFinite, read >= 0, read <= limit else {
            reader.fail(pointer, "must be from 0 to \(bound), not \(BodyReader.shown(value))")
            return nil
        }
        return read
    }

    private static func count(_ value: JSONValue, at pointer: String, _ reader: inout BodyReader) -> Int? {
        guard case .integer(let whole) = value, whole >= 0, whole <= 1_000_000_000 else {
            reader.fail(pointer, "must be a whole number from 0, not \(BodyReader.shown(value))")
            return nil
        }
        return Int(whole)
    }

    /// The rule as the API shows it (and as the store keeps it).
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "kind": .string(kind.rawValue), "minInstalls": .integer(Int64(minInstalls)), "minFailures": .integer(Int64(minFailures)),
            "action": .string(action.rawValue),
        ]
        if let maxRatio { members["maxRatio"] = .real(maxRatio) }
        if let maxRate { members["maxRate"] = .real(maxRate) }
        return .object(members)
    }

    /// A rule from ``json``; nil when it is not one (a newer release's field, a damaged record).
    public init?(json: JSONValue) {
        var reader = BodyReader()
        guard let rule = Self.read(json, at: "", &reader) else { return nil }
        self = rule
    }
}

extension Rollout {
    /// ``guarded(candidate:stable:at:)``, or the change that records nothing: what a store's conditional update is
    /// given to apply the guard to the rollout as stored.
    public func guardChange(candidate: ArmHealth, stable: ArmHealth, at now: Timestamp) -> RolloutChange {
        guarded(candidate: candidate, stable: stable, at: now) ?? .none(self)
    }

    /// What the guard does now, given both arms' health: the change to record (a pause or a rollback, author
    /// `tabserver`, the verdict's reason), or nil when the rollout has no guard, is not running or paused, or holds.
    /// Of replicas racing to apply it the store records one (the revision read); the others find it ended or paused.
    public func guarded(candidate: ArmHealth, stable: ArmHealth, at now: Timestamp) -> RolloutChange? {
        guard let rule = guardRule else { return nil }
        switch status(at: now).state {
        case .running: break
        case .paused: if rule.action == .pause { return nil }
        case .scheduled, .completed, .rolledBack: return nil
        }
        guard case .trip(let action, let reason) = rule.decide(candidate: candidate, stable: stable) else { return nil }
        switch action {
        case .rollback:
            return try? rolledBack(reason: reason, at: now)
        case .pause:
            guard var change = try? patched(RolloutPatch(paused: true), at: now), !change.transitions.isEmpty else { return nil }
            change.transitions[change.transitions.count - 1].reason = reason
            return change
        }
    }
}

extension RolloutChange {
    /// The change that records nothing.
    public static func none(_ rollout: Rollout) -> RolloutChange { RolloutChange(rollout: rollout, transitions: [], pointerMovesTo: nil) }
}
