/// Where an environment points for one account (or one strings table): a version and that version's tag, the
/// `ETag` of `GET …/layout?environment=E`.
public struct Pointer: Sendable, Hashable {
    public var version: Int
    public var etag: String

    public init(version: Int, etag: String) {
        self.version = version
        self.etag = etag
    }
}

/// What a write or a promotion requires of the pointer it moves (RFC 9110 §13.1), with the same rule as every
/// write: `If-Match` (strong comparison) to change an existing pointer, `If-None-Match: *` or nothing to create one.
public enum Precondition: Sendable, Equatable {
    /// No precondition: allowed only while the pointer does not exist.
    case none
    /// `If-Match`: the pointer's current tag must be one of these; `*` matches any existing pointer.
    case ifMatch([String])
    /// `If-None-Match: *`: only when the pointer does not exist.
    case ifNoneMatchAny

    /// Checks this precondition against the pointer's current tag (nil: the environment has no pointer yet).
    /// - Throws: ``RolloutError/preconditionRequired`` (428) or ``RolloutError/preconditionFailed(current:)`` (412,
    ///   carrying the current tag for the answer's `ETag`).
    public func check(current: String?) throws(RolloutError) {
        switch self {
        case .none:
            if current != nil { throw .preconditionRequired }
        case .ifNoneMatchAny:
            if current != nil { throw .preconditionFailed(current: current) }
        case .ifMatch(let tags):
            guard let current, tags.contains("*") || tags.contains(current) else { throw .preconditionFailed(current: current) }
        }
    }
}

/// `?publish=` on `PUT` and `PATCH`: publish (move the environment's pointer to the new version, the default) or
/// store a draft (a version for a later rollout or promotion; the pointer stays where it is).
public enum PublishMode: Sendable, Equatable {
    case publish
    case draft

    /// Reads the query value: absent or `true` publishes, `false` stores a draft.
    /// - Throws: ``RolloutError/invalidParameter(name:message:)`` (400) for any other value.
    public init(query value: String?) throws(RolloutError) {
        switch value {
        case nil, "true": self = .publish
        case "false": self = .draft
        case let other?: throw .invalidParameter(name: "publish", message: "'\(ISODuration.shown(other))' is neither true nor false")
        }
    }
}

/// What a layout write (`PUT`, `PATCH`, `DELETE`, restore) does to its environment's pointer, decided before the
/// store is touched.
public enum WriteEffect: Sendable, Equatable {
    /// Store the version and move the pointer to it; `creates` when the environment had no pointer (201).
    case movePointer(creates: Bool)
    /// Store the version and leave the pointer where it is (a draft, `?publish=false`).
    case storeDraft
}

extension WriteEffect {
    /// Decides a write to an account's layout in one environment.
    ///
    /// The precondition is checked first against the environment's pointer (a draft too: a draft is written against
    /// what the writer saw), then a write that would move the pointer is refused while a rollout is under way there.
    /// - Parameters:
    ///   - mode: from `?publish=`.
    ///   - precondition: from `If-Match` / `If-None-Match`.
    ///   - current: the environment's pointer for the account, nil when it has none.
    ///   - rollout: the environment's latest rollout for the account, if any, as recorded (a completion that is due
    ///     but unrecorded is a 409: the pointer given is about to move).
    ///   - now: the store's clock.
    /// - Throws: 428, 412, or ``RolloutError/Conflict/rolloutInProgress(id:environment:)`` (409).
    public static func decide(
        mode: PublishMode, precondition: Precondition, current: Pointer?, rollout: Rollout?, at now: Timestamp
    ) throws(RolloutError) -> WriteEffect {
        try rollout?.requireCompletionRecorded(at: now)
        try precondition.check(current: current?.etag)
        if mode == .draft { return .storeDraft }
        if let rollout, rollout.isUnderWay(at: now) {
            throw .conflict(.rolloutInProgress(id: rollout.id, environment: rollout.environment.text))
        }
        return .movePointer(creates: current == nil)
    }
}

/// One account's (or one strings table's) pointers across the environments: the per-environment state that
/// writes, promotions and completed rollouts move. The store keeps them; this value decides and applies a move.
public struct EnvironmentPointers: Sendable, Hashable {
    public private(set) var pointers: [EnvironmentName: Pointer]

    public init(_ pointers: [EnvironmentName: Pointer] = [:]) { self.pointers = pointers }

    /// Where `environment` points, nil when it has no version of this account.
    public subscript(environment: EnvironmentName) -> Pointer? { pointers[environment] }

    /// Decides a layout write in `environment` (see ``WriteEffect/decide(mode:precondition:current:rollout:at:)``).
    public func write(
        in environment: EnvironmentName, mode: PublishMode, precondition: Precondition, rollout: Rollout?, at now: Timestamp
    ) throws(RolloutError) -> WriteEffect {
        try WriteEffect.decide(mode: mode, precondition: precondition, current: pointers[environment], rollout: rollout, at: now)
    }

    /// Decides a promotion of this account (see ``PromotionRequest/decide(account:fromPointer:context:)``).
    /// - Parameters:
    ///   - latest: the account's latest rollout in `request.to`.
    ///   - rolloutID: the id a gradual promotion's rollout gets.
    public func promote(
        _ request: PromotionRequest, account: String, precondition: Precondition, latest: Rollout?, rolloutID: Int, at now: Timestamp,
        availability: @escaping @Sendable (Int) -> VersionAvailability
    ) throws(RolloutError) -> PromotionOutcome {
        let context = RolloutStartContext(
            account: account, environment: request.to, id: rolloutID, current: pointers[request.to], latest: latest,
            precondition: precondition, now: now, availability: availability)
        return try request.decide(account: account, fromPointer: pointers[request.from], context: context)
    }

    /// Points `environment` at `pointer` (a published write, a promotion, a completed rollout).
    public mutating func move(_ environment: EnvironmentName, to pointer: Pointer) { pointers[environment] = pointer }

    /// Removes `environment`'s pointer (the account falls back to `default` there).
    public mutating func remove(_ environment: EnvironmentName) { pointers[environment] = nil }
}
