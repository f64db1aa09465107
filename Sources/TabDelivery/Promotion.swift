/// `POST …/layout/promote` and `POST /v1/strings/{locale}/promote`: `{"from": "staging", "to": "production"}`,
/// where `to` defaults to the environment after `from`, and, for a layout, `"rollout": {…}` makes it gradual.
public struct PromotionRequest: Sendable, Hashable {
    public var from: EnvironmentName
    public var to: EnvironmentName
    /// The plan of a gradual promotion (its `version`, when given, must be the one `from` points at).
    public var rollout: RolloutPlan?

    public init(from: EnvironmentName, to: EnvironmentName, rollout: RolloutPlan? = nil) {
        self.from = from
        self.to = to
        self.rollout = rollout
    }

    /// Reads the body.
    /// - Parameters:
    ///   - allowsRollout: false for strings tables, which are promoted at once.
    ///   - now: the store's clock, for a rollout's `startAt`.
    /// - Throws: ``RolloutError/invalidBody(_:)`` (422) for an environment that is not configured, `from` = `to`,
    ///   no environment after `from`, a bad rollout plan, or unknown members.
    public static func decode(
        _ body: [UInt8], environments: EnvironmentList, allowsRollout: Bool = true, now: Timestamp
    ) throws(RolloutError) -> PromotionRequest {
        let object = try BodyReader.object(body, limit: RolloutPlan.maximumBodyBytes)
        var reader = BodyReader()
        reader.refuseUnknown(object, known: allowsRollout ? ["from", "to", "rollout"] : ["from", "to"], at: "")
        func environment(_ key: String) -> EnvironmentName? {
            guard let value = object[key] else { return nil }
            guard let text = reader.string(value, at: "/\(key)", maximumLength: 256) else { return nil }
            guard let name = environments.names.first(where: { $0.text == text }) else {
                let known = environments.names.map(\.text).joined(separator: ", ")
                reader.fail("/\(key)", "there is no environment '\(ISODuration.shown(text))' (the environments are \(known))")
                return nil
            }
            return name
        }
        let from = environment("from")
        if object["from"] == nil { reader.fail("", "\"from\" is required: the environment whose version is promoted") }
        var to = environment("to")
        if let from, object["to"] == nil {
            to = environments.next(after: from)
            if to == nil { reader.fail("/from", "\(from) is the last environment: name the one to promote to in \"to\"") }
        }
        if let from, let to, from == to { reader.fail("/to", "is the same environment as \"from\"") }
        var plan: RolloutPlan?
        if allowsRollout, let value = object["rollout"] {
            if case .object(let members) = value {
                plan = RolloutPlan.read(members, at: "/rollout", versionRequired: false, now: now, &reader)
            } else {
                reader.fail("/rollout", "must be an object like the body of POST …/layout/rollout, not \(value.kind)")
            }
        }
        try reader.finish()
        // A missing or unknown `from`, and a `to` that is unknown or missing after the last environment, each recorded
        // a problem, and `finish` threw for any.
        return PromotionRequest(from: from!, to: to!, rollout: plan)
    }
}

/// What a promotion does.
public enum PromotionOutcome: Sendable, Hashable {
    /// `to` points at `version` now; `creates` when it had no pointer for the account (201).
    case movePointer(version: Int, creates: Bool)
    /// `to` points at that version already: nothing to record.
    case unchanged(version: Int)
    /// A gradual promotion: the rollout to record in `to` (its pointer moves when the rollout completes).
    case rollout(RolloutChange)
}

extension PromotionRequest {
    /// Decides a promotion of one account's layout (or, with no rollout, of a strings table).
    ///
    /// `from` must have a pointer (404); the precondition is checked against `to`'s pointer (428/412; a new
    /// account in `to` takes `If-None-Match: *` or none); a rollout under way in `to` refuses it (409); with a
    /// plan, ``Rollout/start(_:candidate:versionPointer:in:)`` decides the rest.
    /// - Parameters:
    ///   - fromPointer: where `from` points for the account.
    ///   - context: `to`'s side: its pointer (`current`), its latest rollout, the precondition, the clock, and the
    ///     id a new rollout would get.
    /// - Throws: ``RolloutError``.
    public func decide(account: String, fromPointer: Pointer?, context: RolloutStartContext) throws(RolloutError) -> PromotionOutcome {
        guard let source = fromPointer else { throw .notFound(.layout(account: account, environment: from.text)) }
        if let rollout {
            return .rollout(try Rollout.start(rollout, candidate: source.version, versionPointer: "/rollout/version", in: context))
        }
        try context.latest?.requireCompletionRecorded(at: context.now)
        try context.precondition.check(current: context.current?.etag)
        if let latest = context.latest, latest.isUnderWay(at: context.now) {
            throw .conflict(.rolloutInProgress(id: latest.id, environment: to.text))
        }
        if context.current?.version == source.version { return .unchanged(version: source.version) }
        return .movePointer(version: source.version, creates: context.current == nil)
    }

    /// Decides a promotion of a strings table (at once; strings have no rollouts): `from` must have the table
    /// (404), then the precondition against `to`'s pointer (428/412).
    /// - Parameters:
    ///   - locale: the table's locale, for the 404.
    ///   - current: `to`'s pointer for the table.
    /// - Throws: ``RolloutError``.
    public func decide(locale: String, fromPointer: Pointer?, current: Pointer?, precondition: Precondition) throws(RolloutError)
        -> PromotionOutcome
    {
        guard let source = fromPointer else { throw .notFound(.stringsTable(locale: locale, environment: from.text)) }
        try precondition.check(current: current?.etag)
        if current?.version == source.version { return .unchanged(version: source.version) }
        return .movePointer(version: source.version, creates: current == nil)
    }
}
