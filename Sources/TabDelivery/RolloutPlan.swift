import TabGuard
import TabJSON

/// One step of a rollout: serve the candidate to `percent` of installs, then wait `hold` before the next step (the
/// last step's hold ending completes the rollout).
public struct RolloutStep: Sendable, Hashable {
    public var percent: Percent
    public var hold: ISODuration

    public init(percent: Percent, hold: ISODuration) {
        self.percent = percent
        self.hold = hold
    }

    /// The hold in milliseconds (a plan only holds durations of fixed length).
    var holdMillis: Int64 { hold.milliseconds ?? 0 }
}

/// How a rollout's share grows: by steps on the clock, or a fixed percent until changed.
public enum RolloutSchedule: Sendable, Hashable {
    /// Percents strictly increasing, each held for its duration.
    case steps([RolloutStep])
    /// One percent, kept until a `PATCH`, `complete` or `rollback`.
    case fixed(Percent)
}

/// What an operator asks for when starting a rollout (`POST …/layout/rollout`, or `"rollout"` in a promotion):
///
/// ```json
/// {"version": 7, "steps": [{"percent": 5, "hold": "PT10M"}, {"percent": 100, "hold": "PT1H"}],
///  "startAt": "2026-11-26T09:00:00Z", "seed": "spring-tabs", "installs": ["tester-1"]}
/// {"version": 7, "percent": 10}
/// ```
public struct RolloutPlan: Sendable, Hashable {
    /// The candidate version; nil only in a promotion, where the candidate is the version `from` points at.
    public var version: Int?
    public var schedule: RolloutSchedule
    /// When the rollout starts; nil for at once.
    public var startAt: Timestamp?
    /// The bucket seed; nil for the default `{account}:{environment}:{rollout id}`.
    public var seed: String?
    /// Testers: these installs get the candidate whatever their bucket, from the rollout's creation to its end.
    public var installs: [InstallID]
    /// The guard the apps' reports are held to; nil for none.
    public var guardRule: GuardRule?

    public init(
        version: Int?, schedule: RolloutSchedule, startAt: Timestamp? = nil, seed: String? = nil, installs: [InstallID] = [],
        guardRule: GuardRule? = nil
    ) {
        self.version = version
        self.schedule = schedule
        self.startAt = startAt
        self.seed = seed
        self.installs = installs
        self.guardRule = guardRule
    }

    /// The longest hold of one step.
    public static let maximumHoldMillis: Int64 = 30 * 86_400_000
    /// How far in the past `startAt` may be (a clock a little behind the store's is no error).
    public static let startAtTolerance: Int64 = 60_000
    /// How far ahead `startAt` may be: a scheduled rollout holds the account's publishing until it ends, so one set
    /// for 9999 would freeze it.
    public static let startAtHorizon: Int64 = 366 * 86_400_000
    public static let maximumSteps = 100
    public static let maximumInstalls = 1000
    public static let maximumSeedLength = 256
    /// The largest body a rollout request may have.
    public static let maximumBodyBytes = 256 * 1024

    /// Reads the body of `POST …/layout/rollout`.
    /// - Parameter now: the store's clock, against which `startAt` is checked.
    /// - Throws: ``RolloutError/invalidBody(_:)`` (422) with every problem at its JSON Pointer, or
    ///   ``RolloutError/tooLarge(limit:)``.
    public static func decode(_ body: [UInt8], now: Timestamp) throws(RolloutError) -> RolloutPlan {
        let object = try BodyReader.object(body, limit: maximumBodyBytes)
        var reader = BodyReader()
        let plan = read(object, at: "", versionRequired: true, now: now, &reader)
        try reader.finish()
        // `read` returns nil only after recording a problem, and `finish` threw for any.
        return plan!
    }

    /// Reads a plan at `base`; nil when a problem was recorded in `reader`.
    static func read(
        _ object: [String: JSONValue], at base: String, versionRequired: Bool, now: Timestamp, _ reader: inout BodyReader
    ) -> RolloutPlan? {
        let before = reader.problems.count
        reader.refuseUnknown(object, known: ["version", "steps", "percent", "startAt", "seed", "installs", "guard"], at: base)
        var version: Int?
        if let value = object["version"] {
            version = reader.version(value, at: BodyReader.pointer(base, "version"))
        } else if versionRequired {
            reader.fail(base, "\"version\" is required: the version to roll out")
        }
        let schedule = readSchedule(object, at: base, &reader)
        var startAt: Timestamp?
        if let value = object["startAt"] {
            let pointer = BodyReader.pointer(base, "startAt")
            startAt = reader.time(value, at: pointer)
            if let time = startAt, time.milliseconds(since: now) < -startAtTolerance {
                reader.fail(pointer, "\(time.rfc3339) is in the past (now is \(now.rfc3339)); leave startAt out to start at once")
            } else if let time = startAt, time.milliseconds(since: now) > startAtHorizon {
                reader.fail(pointer, "\(time.rfc3339) is more than a year ahead (now is \(now.rfc3339))")
            }
        }
        let seed = reader.nonEmptyString(
            object, "seed", at: base, maximumLength: maximumSeedLength, whenEmpty: "is empty; leave it out for the default seed")
        let installs = readInstalls(object["installs"], at: BodyReader.pointer(base, "installs"), &reader)
        var guardRule: GuardRule?
        if let value = object["guard"], value != .null { guardRule = GuardRule.read(value, at: BodyReader.pointer(base, "guard"), &reader) }
        guard reader.problems.count == before, let schedule else { return nil }
        return RolloutPlan(version: version, schedule: schedule, startAt: startAt, seed: seed, installs: installs, guardRule: guardRule)
    }

    private static func readSchedule(_ object: [String: JSONValue], at base: String, _ reader: inout BodyReader) -> RolloutSchedule? {
        switch (object["steps"], object["percent"]) {
        case (nil, nil):
            reader.fail(base, "give \"steps\" (percents with holds) or a fixed \"percent\"")
            return nil
        case (.some, .some):
            reader.fail(BodyReader.pointer(base, "percent"), "give \"steps\" or \"percent\", not both")
            return nil
        case (nil, let value?):
            return reader.percent(value, at: BodyReader.pointer(base, "percent")).map(RolloutSchedule.fixed)
        case (let value?, nil):
            return readSteps(value, at: BodyReader.pointer(base, "steps"), &reader).map(RolloutSchedule.steps)
        }
    }

    private static func readSteps(_ value: JSONValue, at base: String, _ reader: inout BodyReader) -> [RolloutStep]? {
        guard case .array(let items) = value else {
            reader.fail(base, "must be an array of {\"percent\", \"hold\"}, not \(value.kind)")
            return nil
        }
        if items.isEmpty { reader.fail(base, "is empty: give at least one step") }
        if items.count > maximumSteps { reader.fail(base, "has \(items.count) steps; at most \(maximumSteps)") }
        let before = reader.problems.count
        var steps: [RolloutStep] = []
        for (index, item) in items.prefix(maximumSteps).enumerated() {
            let pointer = BodyReader.pointer(base, index)
            guard case .object(let members) = item else {
                reader.fail(pointer, "must be an object {\"percent\", \"hold\"}, not \(item.kind)")
                continue
            }
            reader.refuseUnknown(members, known: ["percent", "hold"], at: pointer)
            let percent = members["percent"].flatMap { reader.percent($0, at: BodyReader.pointer(pointer, "percent")) }
            if members["percent"] == nil { reader.fail(pointer, "\"percent\" is required") }
            let hold = members["hold"].flatMap { readHold($0, at: BodyReader.pointer(pointer, "hold"), &reader) }
            if members["hold"] == nil { reader.fail(pointer, "\"hold\" is required (an ISO 8601 duration such as PT10M)") }
            if let percent, let previous = steps.last?.percent, percent <= previous {
                reader.fail(BodyReader.pointer(pointer, "percent"), "must be above the step before's \(previous): the share only grows")
            }
            if let percent, let hold { steps.append(RolloutStep(percent: percent, hold: hold)) }
        }
        return reader.problems.count == before && !items.isEmpty ? steps : nil
    }

    private static func readHold(_ value: JSONValue, at pointer: String, _ reader: inout BodyReader) -> ISODuration? {
        guard let text = reader.string(value, at: pointer, maximumLength: 64) else { return nil }
        let hold: ISODuration
        do {
            hold = try ISODuration(text)
        } catch {
            reader.fail(pointer, error)
            return nil
        }
        guard let millis = hold.milliseconds else {
            reader.fail(pointer, "years and months have no fixed length: give days, hours, minutes or seconds (P30D at most)")
            return nil
        }
        if millis > maximumHoldMillis {
            reader.fail(pointer, "'\(text)' is above 30 days (P30D), the longest hold")
            return nil
        }
        return hold
    }

    private static func readInstalls(_ value: JSONValue?, at base: String, _ reader: inout BodyReader) -> [InstallID] {
        guard let value else { return [] }
        guard case .array(let items) = value else {
            reader.fail(base, "must be an array of install ids, not \(value.kind)")
            return []
        }
        if items.count > maximumInstalls { reader.fail(base, "has \(items.count) install ids; at most \(maximumInstalls)") }
        var installs: [InstallID] = []
        for (index, item) in items.prefix(maximumInstalls).enumerated() {
            let pointer = BodyReader.pointer(base, index)
            guard let text = reader.string(item, at: pointer, maximumLength: .max) else { continue }
            if let problem = InstallID.problem(with: text) {
                reader.fail(pointer, problem)
            } else if let id = try? InstallID(text), !installs.contains(id) {
                installs.append(id)
            }
        }
        return installs
    }
}
