import Foundation
import TabAccess
import TabDelivery
import TabJSON

/// How a promotion's outcome is decided inside the store's transaction: from `from`'s pointer, the id a new rollout in
/// `to` would get, `to`'s pointer, its latest rollout and which versions exist
/// (``PromotionRequest/decide(account:fromPointer:context:)``).
public typealias PromotionDecision =
    @Sendable (
        _ fromPointer: Pointer?, _ id: Int, _ current: Pointer?, _ latest: Rollout?, _ availability: [Int: VersionAvailability]
    ) throws(RolloutError) -> PromotionOutcome

/// Environment pointers and rollouts inside one write transaction; each backend implements them.
public protocol RolloutRows {
    /// The version an environment points at for an account (a deletion record's included), nil when none.
    func pointer(account: String, environment: String) throws(StoreError) -> Int?
    /// Points an environment at a version of an account (announced to the other replicas), and records the version
    /// among those the environment served (``recordServed(account:environment:version:)``).
    func setPointer(account: String, environment: String, version: Int) throws(StoreError)
    /// Records that an environment served a version of an account (its pointer, or a rollout's candidate): kept when
    /// the pointer moves on, for `…/tabs?version=N` and a build's fall back to an earlier version.
    func recordServed(account: String, environment: String, version: Int) throws(StoreError)
    /// Every version an environment served of an account, newest first.
    func servedVersions(account: String) throws(StoreError) -> [ServedVersion]
    /// Every environment's pointer for an account.
    func pointers(account: String) throws(StoreError) -> [String: Int]
    /// The version an environment points at for a strings table, nil when none.
    func stringsPointer(locale: String, environment: String) throws(StoreError) -> Int?
    /// Points an environment at a version of a strings table (announced to the other replicas).
    func setStringsPointer(locale: String, environment: String, version: Int) throws(StoreError)
    /// Tells the other replicas of a promotion, at commit (stores no other process reads do nothing).
    func announcePromotion(_ subject: PromotionSubject, from: String, to: String, version: Int, author: String, atMillis: Int64)
        throws(StoreError)
    /// One version of a strings table.
    func strings(locale: String, number: Int) throws(StoreError) -> StoredStrings?
    /// Accounts whose version in `environment` extends `account` (deletions excluded).
    func accounts(extending account: String, environment: String) throws(StoreError) -> [String]
    /// The account's newest rollout in an environment, whatever its state.
    func latestRollout(account: String, environment: String) throws(StoreError) -> Rollout?
    /// Rollouts whose end is not recorded.
    func rolloutsUnderWay() throws(StoreError) -> [Rollout]
    /// The id the next rollout of an account in an environment gets (1, 2, …).
    func nextRolloutID(account: String, environment: String) throws(StoreError) -> Int
    func insert(_ rollout: Rollout) throws(StoreError)
    /// Replaces a rollout whose stored revision is `expected`; false when another writer recorded one first.
    func update(_ rollout: Rollout, expected: Int) throws(StoreError) -> Bool
    /// Stores one replica's answers per arm for a rollout (its running totals).
    func saveServed(_ rollout: Rollout, replica: String, counts: ServedCounts) throws(StoreError)
    /// The answers per arm for a rollout, summed over replicas.
    func served(_ rollout: Rollout) throws(StoreError) -> ServedCounts
}

/// A version an environment served of an account: pointed at, or a rollout's candidate.
public struct ServedVersion: Hashable, Sendable {
    public let environment: String
    public let version: Int

    public init(environment: String, version: Int) {
        self.environment = environment
        self.version = version
    }
}

/// The environments' pointers and the rollouts (`…/layout/rollout`, the stepper, `/v1/alerts`).
public protocol RolloutStore: Sendable {
    /// The record an environment points at for an account (a deletion record included), nil when none.
    func pointed(account: String, environment: String) async throws(StoreError) -> StoredVersion?
    /// Every environment's pointer for an account (for the version list's `environments`).
    func pointers(account: String) async throws(StoreError) -> [String: Int]
    /// Every version an environment pointed at or a rollout served of an account, newest first (drafts never).
    func servedVersions(account: String) async throws(StoreError) -> [ServedVersion]
    /// The account's newest rollout in an environment, and its answers per arm summed over replicas.
    func latestRollout(account: String, environment: String) async throws(StoreError) -> (Rollout, ServedCounts)?
    /// Every rollout whose end is not recorded.
    func rolloutsUnderWay() async throws(StoreError) -> [Rollout]
    /// Starts a rollout: `decide` gets the new rollout's id, the environment's pointer, the latest rollout and which
    /// versions exist, and returns the change to record, all in one transaction.
    func startRollout(
        account: String, environment: String, author: String, audit: AuditEntry?,
        _ decide:
            @escaping @Sendable (_ id: Int, _ current: Pointer?, _ latest: Rollout?, _ availability: [Int: VersionAvailability])
            throws(RolloutError) -> RolloutChange
    ) async throws(StoreError) -> RecordedRollout
    /// Changes the account's newest rollout in an environment (see ``StoreBackend``'s implementation).
    func changeRollout(
        account: String, environment: String, author: String, audit: AuditEntry?,
        _ change: @escaping @Sendable (Rollout) throws(RolloutError) -> RolloutChange
    ) async throws(StoreError) -> RecordedRollout
    /// Stores this replica's answers per arm for the rollouts it served.
    func saveServed(_ counts: [(Rollout, ServedCounts)], replica: String) async throws(StoreError)
    /// The version of a strings table an environment points at.
    func pointedStrings(locale: String, environment: String) async throws(StoreError) -> StoredStrings?
    /// Points `to` at the version of a strings table `from` points at (``PromotionRequest/decide(locale:fromPointer:current:precondition:)``
    /// decides, in the transaction). Returns the record `to` points at and whether it moved.
    func promoteStrings(
        locale: String, from: String, to: String, author: String, audit: AuditEntry?,
        _ decide: @escaping @Sendable (_ fromPointer: Pointer?, _ current: Pointer?) throws(RolloutError) -> PromotionOutcome
    ) async throws(StoreError) -> (StoredStrings, moved: Bool)
    /// Promotes an account's layout from one environment to another: `decide` gets `from`'s pointer and what
    /// starting a rollout in `to` needs (``PromotionRequest/decide(account:fromPointer:context:)``), and its outcome is
    /// recorded in the same transaction (the pointer moved, or a rollout started), with `audit`.
    func promote(
        account: String, from: String, to: String, author: String, audit: AuditEntry?,
        _ decide: @escaping PromotionDecision
    ) async throws(StoreError) -> Promotion
}

/// What a promotion did.
public enum Promotion: Sendable {
    /// `to` points at this record now (`created`: it had no pointer for the account).
    case moved(StoredVersion, created: Bool)
    /// `to` pointed at this record already: nothing was recorded.
    case unchanged(StoredVersion)
    /// A gradual promotion: a rollout of `from`'s version started in `to`.
    case rollout(RecordedRollout)
}

/// A rollout change to record: the rollout as the change left it, and whether the environment's pointer moves.
public struct RecordedRollout: Sendable {
    public init(rollout: Rollout, transitions: [RolloutTransition], pointed: StoredVersion?) {
        self.rollout = rollout
        self.transitions = transitions
        self.pointed = pointed
    }

    /// The rollout as stored now.
    public var rollout: Rollout
    /// What was recorded, in order (empty: nothing changed, nothing was written).
    public var transitions: [RolloutTransition]
    /// The record the environment points at after the change, when the pointer moved (a completion).
    public var pointed: StoredVersion?
    /// Whether the change set or removed the rollout's guard (a change with no transition of its own).
    public var guardChanged = false
}

extension StoreBackend {
    public func pointed(account: String, environment: String) async throws(StoreError) -> StoredVersion? {
        try await transaction { (rows) throws(StoreError) in try WriteRule.pointed(account, environment, rows) }
    }

    public func pointers(account: String) async throws(StoreError) -> [String: Int] {
        try await transaction { (rows) throws(StoreError) in try rows.pointers(account: account) }
    }

    public func servedVersions(account: String) async throws(StoreError) -> [ServedVersion] {
        try await transaction { (rows) throws(StoreError) in try rows.servedVersions(account: account) }
    }

    public func latestRollout(account: String, environment: String) async throws(StoreError) -> (Rollout, ServedCounts)? {
        try await transaction { (rows) throws(StoreError) in
            guard let rollout = try rows.latestRollout(account: account, environment: environment) else { return nil }
            return (rollout, try rows.served(rollout))
        }
    }

    public func rolloutsUnderWay() async throws(StoreError) -> [Rollout] {
        try await transaction { (rows) throws(StoreError) in try rows.rolloutsUnderWay() }
    }

    public func startRollout(
        account: String, environment: String, author: String, audit: AuditEntry?,
        _ decide:
            @escaping @Sendable (_ id: Int, _ current: Pointer?, _ latest: Rollout?, _ availability: [Int: VersionAvailability])
            throws(RolloutError) -> RolloutChange
    ) async throws(StoreError) -> RecordedRollout {
        try await transaction { (rows) throws(StoreError) in
            let current = try WriteRule.layoutPointer(account, environment, rows)
            let latest = try rows.latestRollout(account: account, environment: environment)
            let availability = try WriteRule.availability(account, rows)
            let id = try rows.nextRolloutID(account: account, environment: environment)
            let change: RolloutChange
            do throws(RolloutError) {
                change = try decide(id, current, latest, availability)
            } catch {
                throw .refused(error)
            }
            return try WriteRule.insertRollout(change, author: author, audit: audit, rows)
        }
    }

    /// Changes the account's newest rollout in an environment: `change` gets it as stored and returns what to record
    /// (a PATCH, a completion, a rollback, or the clock's steps). Written only where the stored revision is still the
    /// one read, with the pointer move of a completion and `audit`, in one transaction; nothing is written when the
    /// change has no transitions. - Throws: ``StoreError/notFound`` when the account has no rollout there.
    public func changeRollout(
        account: String, environment: String, author: String, audit: AuditEntry?,
        _ change: @escaping @Sendable (Rollout) throws(RolloutError) -> RolloutChange
    ) async throws(StoreError) -> RecordedRollout {
        try await transaction { (rows) throws(StoreError) in
            guard let stored = try rows.latestRollout(account: account, environment: environment) else { throw .notFound }
            return try WriteRule.recordRollout(stored, author: author, audit: audit, rows, change)
        }
    }

    public func saveServed(_ counts: [(Rollout, ServedCounts)], replica: String) async throws(StoreError) {
        guard !counts.isEmpty else { return }
        try await transaction { (rows) throws(StoreError) in
            for (rollout, served) in counts { try rows.saveServed(rollout, replica: replica, counts: served) }
        }
    }

    public func promote(
        account: String, from: String, to: String, author: String, audit: AuditEntry?,
        _ decide: @escaping PromotionDecision
    ) async throws(StoreError) -> Promotion {
        try await transaction { (rows) throws(StoreError) in
            let latest = try rows.latestRollout(account: account, environment: to)
            let availability = try WriteRule.availability(account, rows)
            let (source, target) = (try WriteRule.layoutPointer(account, from, rows), try WriteRule.layoutPointer(account, to, rows))
            let id = try rows.nextRolloutID(account: account, environment: to)
            let outcome: PromotionOutcome
            do throws(RolloutError) {
                outcome = try decide(source, id, target, latest, availability)
            } catch {
                throw .refused(error)
            }
            switch outcome {
            case .unchanged(let version):
                guard let record = try rows.version(account: account, number: version) else { throw .notFound }
                return .unchanged(record)
            case .movePointer(let version, let creates):
                guard let record = try rows.version(account: account, number: version) else { throw .notFound }
                try rows.setPointer(account: account, environment: to, version: version)
                try WriteRule.record(audit, version: version, rows)
                let now = rows.clock.unixMillis
                try Outbox.enqueue(promotion: record, from: from, to: to, author: author, atMillis: now, rows)
                try rows.announcePromotion(.layout(account: account), from: from, to: to, version: version, author: author, atMillis: now)
                return .moved(record, created: creates)
            case .rollout(let change):
                return .rollout(try WriteRule.insertRollout(change, author: author, audit: audit, rows))
            }
        }
    }

    public func pointedStrings(locale: String, environment: String) async throws(StoreError) -> StoredStrings? {
        try await transaction { (rows) throws(StoreError) in try WriteRule.pointedStrings(locale, environment, rows) }
    }

    public func promoteStrings(
        locale: String, from: String, to: String, author: String, audit: AuditEntry?,
        _ decide: @escaping @Sendable (_ fromPointer: Pointer?, _ current: Pointer?) throws(RolloutError) -> PromotionOutcome
    ) async throws(StoreError) -> (StoredStrings, moved: Bool) {
        try await transaction { (rows) throws(StoreError) in
            let source = try WriteRule.pointedStrings(locale, from, rows).map { Pointer(version: $0.version, etag: $0.etag) }
            let target = try WriteRule.pointedStrings(locale, to, rows).map { Pointer(version: $0.version, etag: $0.etag) }
            let outcome: PromotionOutcome
            do throws(RolloutError) {
                outcome = try decide(source, target)
            } catch {
                throw .refused(error)
            }
            switch outcome {
            case .unchanged(let version):
                guard let record = try rows.strings(locale: locale, number: version) else { throw .notFound }
                return (record, false)
            case .movePointer(let version, _):
                guard let record = try rows.strings(locale: locale, number: version) else { throw .notFound }
                try rows.setStringsPointer(locale: locale, environment: to, version: version)
                try WriteRule.record(audit, version: version, rows)
                try rows.announcePromotion(
                    .strings(locale: locale), from: from, to: to, version: version, author: author, atMillis: rows.clock.unixMillis)
                return (record, true)
            case .rollout:
                throw .refused(.invalidBody([FieldError(pointer: "/rollout", message: "strings tables are promoted at once")]))
            }
        }
    }
}

extension WriteRule {
    /// `environment`'s pointer for `account` as TabDelivery takes it: nil when none, or when it points at a deletion.
    static func layoutPointer(_ account: String, _ environment: String, _ rows: any StoreRows) throws(StoreError) -> Pointer? {
        try pointed(account, environment, rows).flatMap { $0.deleted ? nil : Pointer(version: $0.version, etag: $0.etag) }
    }

    /// Which of `account`'s versions exist and which record a deletion (versions are 1, 2, … contiguous).
    static func availability(_ account: String, _ rows: any StoreRows) throws(StoreError) -> [Int: VersionAvailability] {
        var availability: [Int: VersionAvailability] = [:]
        let newest = try rows.latest(account: account)?.version ?? 0
        if newest > 0 {
            for number in 1...newest { availability[number] = .available }
        }
        for deletion in try rows.deletedVersions(account: account) { availability[deletion] = .deleted }
        // A revoked version is served by no rollout: as far as starting one goes, it is not there.
        for revoked in try revokedVersions(account, rows) { availability[revoked] = .missing }
        return availability
    }
    /// The version of a strings table `environment` points at.
    static func pointedStrings(_ locale: String, _ environment: String, _ rows: any StoreRows) throws(StoreError) -> StoredStrings? {
        guard let number = try rows.stringsPointer(locale: locale, environment: environment) else { return nil }
        return try rows.strings(locale: locale, number: number)
    }

    /// The record `environment` points at for `account`.
    static func pointed(_ account: String, _ environment: String, _ rows: any StoreRows) throws(StoreError) -> StoredVersion? {
        guard let number = try rows.pointer(account: account, environment: environment) else { return nil }
        return try rows.version(account: account, number: number)
    }

    /// Records a new rollout (its first transitions in its history as `author`'s), with `audit` and its events for
    /// the webhooks.
    static func insertRollout(_ change: RolloutChange, author: String, audit: AuditEntry?, _ rows: any StoreRows)
        throws(StoreError) -> RecordedRollout
    {
        let made = change.recorded(by: author)
        try rows.insert(made.rollout)
        try rows.recordServed(
            account: made.rollout.account, environment: made.rollout.environment.text, version: made.rollout.candidateVersion)
        try record(audit, version: made.rollout.candidateVersion, rows)
        for transition in made.transitions { try Outbox.enqueue(made.rollout.event(for: transition, author: author), rows) }
        return RecordedRollout(rollout: made.rollout, transitions: made.transitions, pointed: nil)
    }

    /// Records `change(stored)` (its transitions in the rollout's history as `author`'s) where the stored revision is
    /// still `stored`'s, and moves the pointer on completion.
    static func recordRollout(
        _ stored: Rollout, author: String, audit: AuditEntry?, _ rows: any StoreRows,
        _ change: (Rollout) throws(RolloutError) -> RolloutChange
    ) throws(StoreError) -> RecordedRollout {
        let made: RolloutChange
        do throws(RolloutError) {
            made = try change(stored).recorded(by: author)
        } catch {
            throw .refused(error)
        }
        let guardChanged = made.rollout.guardRule != stored.guardRule
        guard !made.transitions.isEmpty || guardChanged else { return RecordedRollout(rollout: stored, transitions: [], pointed: nil) }
        guard try rows.update(made.rollout, expected: stored.revision) else { throw .conflict }
        var pointed: StoredVersion?
        if let target = made.pointerMovesTo {
            try rows.setPointer(account: stored.account, environment: stored.environment.text, version: target)
            pointed = try rows.version(account: stored.account, number: target)
        }
        try record(audit, version: made.rollout.candidateVersion, rows)
        for transition in made.transitions {
            try Outbox.enqueue(made.rollout.event(for: transition, author: author), rows)
            if audit == nil {
                // The clock's changes have no request: each is in the history as its author's, once, with the change.
                try rows.insertAudit(
                    AuditEntry(
                        at: Date(millis: transition.at.unixMillis), actor: author, tokenID: nil, address: "", method: "",
                        path: "/v1/accounts/\(stored.account)/layout/rollout", action: "rollout.\(transition.kind.rawValue)",
                        account: stored.account, environment: stored.environment.text, version: made.rollout.candidateVersion, status: 200))
            }
        }
        var recorded = RecordedRollout(rollout: made.rollout, transitions: made.transitions, pointed: pointed)
        recorded.guardChanged = guardChanged
        return recorded
    }
}
