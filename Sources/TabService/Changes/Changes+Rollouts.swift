import Logging
import MicroHTTPD
import TabDelivery
import TabLayout
import TabStore

/// The write commands of environments and rollouts (docs/rollouts.md): a rollout started or changed, a layout or a
/// strings table promoted. The decisions are TabDelivery's; the store records each change once (conditional on the
/// revision read); these publish what was recorded.
extension Changes {
    /// Starts a rollout of `plan` (checked by the builds gate unless `options` allow incompatible builds).
    func startRollout(
        account: String, environment: EnvironmentName, _ plan: RolloutPlan, precondition: WritePrecondition, author: String,
        options: WriteOptions
    ) async -> HTTPResponse {
        // The gate: every live build must be able to open the candidate its share will get.
        if !options.allowIncompatible, let version = plan.version,
            let refused = await gate(account: account, version: version, in: environment)
        {
            return refused
        }
        let clock = clock
        do throws(StoreError) {
            let recorded = try await store.startRollout(
                account: account, environment: environment.text, author: author,
                audit: AuditContext.current?.entry(action: "rollout.start", account: account, status: 201)
            ) { (id, current, latest, availability) throws(RolloutError) in
                try Rollout.start(
                    plan,
                    in: RolloutStartContext(
                        account: account, environment: environment, id: id, current: current, latest: latest,
                        precondition: precondition, now: clock.now, availability: { availability[$0] ?? .missing }))
            }
            await publish(recorded)
            return rolloutAnswer(recorded.rollout, status: 201)
        } catch {
            return storeProblem(error)
        }
    }

    /// Points `promotion.to` at what `promotion.from` serves, or starts a rollout of it (checked by the builds gate
    /// unless `options` allow incompatible builds).
    func promote(
        account: String, _ promotion: PromotionRequest, precondition: WritePrecondition, author: String, options: WriteOptions
    ) async -> HTTPResponse {
        // The gate: what `from` serves must open on every live build once `to` serves it.
        if !options.allowIncompatible, let promoted = snapshot(for: promotion.from).record(account), !promoted.deleted,
            let refused = await gate(account: account, version: promoted.version, in: promotion.to)
        {
            return refused
        }
        let clock = clock
        do throws(StoreError) {
            let outcome = try await store.promote(
                account: account, from: promotion.from.text, to: promotion.to.text, author: author,
                audit: AuditContext.current?.entry(action: "layout.promote", account: account, status: 200)
            ) { (source, id, current, latest, availability) throws(RolloutError) in
                try promotion.decide(
                    account: account, fromPointer: source,
                    context: RolloutStartContext(
                        account: account, environment: promotion.to, id: id, current: current, latest: latest,
                        precondition: precondition, now: clock.now, availability: { availability[$0] ?? .missing }))
            }
            switch outcome {
            case .unchanged(let record):
                return written(record, status: 200)
            case .moved(let record, let created):
                await publishPromotion(record, from: promotion.from.text, to: promotion.to, author: author, atMillis: clock.unixMillis)
                return written(record, status: created ? 201 : 200)
            case .rollout(let recorded):
                await publish(recorded)
                return rolloutAnswer(recorded.rollout, status: 201)
            }
        } catch {
            return storeProblem(error)
        }
    }

    /// Points `promotion.to` at the version of the strings table `promotion.from` points at.
    func promoteStrings(locale: String, _ promotion: PromotionRequest, precondition: WritePrecondition, author: String) async
        -> HTTPResponse
    {
        do throws(StoreError) {
            let (record, moved) = try await store.promoteStrings(
                locale: locale, from: promotion.from.text, to: promotion.to.text, author: author,
                audit: AuditContext.current?.entry(action: "strings.promote", account: nil, status: 200)
            ) { (source, current) throws(RolloutError) in
                try promotion.decide(locale: locale, fromPointer: source, current: current, precondition: precondition)
            }
            if moved, let table = try? StringsTable.read(record.source) {
                await publishPromotion(
                    strings: record, table: table, from: promotion.from.text, to: promotion.to, author: author,
                    atMillis: clock.unixMillis)
            }
            return json(
                200, ["locale": .string(locale), "version": .integer(Int64(record.version)), "etag": .string(record.etag)],
                headers: [HTTPHeader("ETag", record.etag)])
        } catch {
            return storeProblem(error)
        }
    }

    /// Serves a promoted version in `to` and tells `/v1/events` (`event: promote`): on the replica that promoted, and
    /// on the others when the store announces it.
    func publishPromotion(_ record: StoredVersion, from: String, to: EnvironmentName, author: String, atMillis: Int64) async {
        let event = ChangeEvent(
            kind: .promote, account: record.account, locale: nil, version: record.version, etag: record.etag, author: author,
            atMillis: atMillis, deleted: false, sequence: 0, affected: nil,
            data: ChangeEventData.promotion(record, from: from, to: to.text, author: author, atMillis: atMillis))
        await commit(
            record, document: try? LayoutSource.parse(record.source, format: sourceFormat(record.contentType)), in: to, event: event)
    }

    /// Serves a promoted strings table in `to` and tells `/v1/events` (`event: promote`, for every account).
    func publishPromotion(
        strings record: StoredStrings, table: StringsTable, from: String, to: EnvironmentName, author: String, atMillis: Int64
    )
        async
    {
        let event = ChangeEvent(
            kind: .promote, account: nil, locale: record.locale, version: record.version, etag: record.etag, author: author,
            atMillis: atMillis, deleted: false, sequence: 0, affected: nil,
            data: ChangeEventData.promotion(record, from: from, to: to.text, author: author, atMillis: atMillis))
        await commit(strings: record, table: table, in: to, event: event)
    }

    /// The change `action` (`rollout.patch`, `rollout.complete` or `rollout.rollback`) with `body` makes to the newest
    /// rollout as stored. - Throws: ``RolloutError/invalidBody(_:)`` for a body that does not read.
    func rolloutChange(_ action: String, body: [UInt8]) throws(RolloutError)
        -> @Sendable (Rollout) throws(RolloutError) ->
        RolloutChange
    {
        let clock = clock
        switch action {
        case "rollout.patch":
            let patch = try RolloutPatch.decode(body)
            return { (rollout) throws(RolloutError) in try rollout.patched(patch, at: clock.now) }
        case "rollout.complete":
            return { (rollout) throws(RolloutError) in try rollout.completed(at: clock.now) }
        default:
            let reason = try RollbackRequest.reason(from: body)
            return { (rollout) throws(RolloutError) in try rollout.rolledBack(reason: reason, at: clock.now) }
        }
    }

    /// Whether a rollout change gives the candidate to more installs (a raise, a completion): checked by the builds
    /// gate and held for review in a protected environment. A pause, a resume and a rollback never are.
    static func rolloutChangeMoves(_ action: String, body: [UInt8]) -> Bool {
        action == "rollout.complete" || (action == "rollout.patch" && (try? RolloutPatch.decode(body))?.percent != nil)
    }

    /// Records `change` of the account's newest rollout in `environment` and publishes it.
    func changeRollout(
        account: String, environment: EnvironmentName, action: String, author: String,
        _ change: @escaping @Sendable (Rollout) throws(RolloutError) -> RolloutChange
    ) async -> HTTPResponse {
        do throws(StoreError) {
            let recorded = try await store.changeRollout(
                account: account, environment: environment.text, author: author,
                audit: AuditContext.current?.entry(action: action, account: account, status: 200), change)
            await publish(recorded)
            return rolloutAnswer(recorded.rollout, status: 200)
        } catch .notFound {
            return Problem.rollout(.notFound(.rollout(account: account, environment: environment.text))).response
        } catch {
            return storeProblem(error)
        }
    }

    /// The rollout document (`GET …/rollout`'s body), with this replica's answer counts unless told the total.
    func rolloutAnswer(_ rollout: Rollout, status: Int, served: ServedCounts? = nil, health: HealthDocument? = nil) -> HTTPResponse {
        let document = rollout.document(at: clock.now, served: served ?? armCounts.served(rollout), health: health)
        return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")], body: document.json)
    }

    /// Makes a recorded rollout change visible: the snapshot serves the rollout as recorded (and the candidate once
    /// completed), its transitions go to `/v1/events`, and held long-polls of the account are woken (each answers
    /// only when its own representation changed: the installs a step moved).
    func publish(_ recorded: RecordedRollout) async {
        guard !recorded.transitions.isEmpty || recorded.pointed != nil || recorded.guardChanged else { return }
        let rollout = recorded.rollout
        var candidate: StoredVersion?
        if rollout.progress.ending == nil {
            do {
                candidate = try await store.version(account: rollout.account, number: rollout.candidateVersion)
            } catch {
                logger.error("reading rollout \(rollout.id)'s candidate of \(rollout.account) failed: \(error)")
            }
        }
        let pointed = recorded.pointed
        let candidateRecord = candidate
        let document = pointed.flatMap { record in try? LayoutSource.parse(record.source, format: sourceFormat(record.contentType)) }
        let counts = armCounts.counts(for: rollout)
        let logger = self.logger
        // The store put the change's transitions in the rollout's history, as its author's, at its revision.
        let events = recorded.transitions.isEmpty ? [] : rolloutEvents(rollout, at: rollout.revision)
        await publish(in: rollout.environment) { snapshot in
            var next = snapshot
            var affected: Set<String> = [rollout.account]
            if let pointed, let moved = next.applying(pointed, document: document, logger: logger) {
                affected.formUnion(snapshot.dependents(of: rollout.account))
                next = moved
            }
            next = next.serving(rollout, account: rollout.account, candidate: candidateRecord, counts: counts, logger: logger)
            var all = events
            if let pointed { all.append(ChangeEvent(layout: pointed, affected: affected)) }
            all = all.map { event in
                var event = event
                event.affected = affected
                return event
            }
            return (next, all)
        }
    }

    /// The `event: rollout` of each line of `rollout`'s history recorded at `revision` (one change), as its author's.
    func rolloutEvents(_ rollout: Rollout, at revision: Int) -> [ChangeEvent] {
        rollout.history(at: revision).map { line in
            ChangeEvent(
                kind: .rollout, account: rollout.account, locale: nil, version: rollout.candidateVersion, etag: "", author: line.author,
                atMillis: line.transition.at.unixMillis, deleted: false, sequence: 0, affected: [rollout.account],
                data: rollout.event(for: line.transition, author: line.author).json)
        }
    }

    /// Serves the rollouts under way in every environment (at start, and after another replica changed one), and
    /// gives `/v1/events` the events `announcing` names, in the publication of their environment.
    func loadRollouts(account: String? = nil, announcing: (EnvironmentName, [ChangeEvent])? = nil) async throws(StoreError) {
        let underWay = try await store.rolloutsUnderWay().filter { account == nil || $0.account == account }
        var candidates: [String: StoredVersion] = [:]
        for rollout in underWay {
            candidates[ArmCountsRegistry.key(rollout)] = try await store.version(
                account: rollout.account, number: rollout.candidateVersion)
        }
        let candidateRecords = candidates
        let logger = self.logger
        let counts = armCounts
        for environment in environments.names {
            let here = underWay.filter { $0.environment == environment }
            let held = snapshot(for: environment).contents.rollouts.keys
            let accounts = account.map { [$0] } ?? Array(Set(here.map(\.account)).union(held))
            // Another replica's rollout that ended meanwhile: its end still counts for the manifest's revision.
            var ended: Rollout?
            if let account, !here.contains(where: { $0.account == account }) {
                ended = try await store.latestRollout(account: account, environment: environment.text)?.0
            }
            let endedRollout = ended
            await publish(in: environment) { snapshot in
                var next = snapshot
                for name in accounts {
                    let rollout = here.last { $0.account == name } ?? endedRollout
                    next = next.serving(
                        rollout, account: name, candidate: rollout.flatMap { candidateRecords[ArmCountsRegistry.key($0)] },
                        counts: rollout.map(counts.counts(for:)), logger: logger)
                }
                return (next, announcing?.0 == environment ? announcing?.1 ?? [] : [])
            }
        }
    }

}
