import Logging
import MicroHTTPD
import TabAccess
import TabBuilds
import TabDelivery
import TabLayout
import TabStore

/// The handlers of "Environments and rollouts" (docs/rollouts.md): a rollout started, read, raised or paused, completed or rolled
/// back, and Alertmanager's alerts that roll rollouts back. The decisions are TabDelivery's; the store records each
/// change once (conditional on the revision read); this file publishes what was recorded.
extension TabService {
    /// The store's clock as TabDelivery takes it.
    static var now: Timestamp { Timestamp(unixMillis: currentTimeMillis()) }

    /// The account and environment a rollout route names.
    private func rolloutTarget(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> Result<(String, EnvironmentName), ProblemError> {
        let account = match["account"]
        guard isValidAccountName(account) else { return .failure(ProblemError(Problem.invalidAccount)) }
        return managedEnvironment(request).map { (account, $0) }
    }

    /// `POST …/layout/rollout`: the plan checked, then started against the environment's pointer (`If-Match`).
    func startRolloutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let (account, environment): (String, EnvironmentName)
        switch rolloutTarget(request, match) {
        case .success(let target): (account, environment) = target
        case .failure(let problem): return .response(problem.response)
        }
        let plan: RolloutPlan
        do throws(RolloutError) {
            plan = try RolloutPlan.decode(request.body, now: Self.now)
        } catch {
            return .response(Problem.rollout(error).response)
        }
        let options: WriteOptions
        switch writeOptions(request, match, environment: environment) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let precondition = writePrecondition(request)
        let author = match.author
        let body = request.body
        return .deferred {
            if !options.applying, let required = self.reviewRequired(in: environment, options) {
                let misses: [BuildMiss]
                do throws(StoreError) {
                    misses = try await self.gateMisses(account: account, version: plan.version, in: environment)
                } catch {
                    return self.storeProblem(error)
                }
                return await self.holdForReview(
                    action: "rollout.start", account: account, environment: environment, version: plan.version, precondition: precondition,
                    author: author, required: required, applyAt: options.applyAtMillis, misses: misses, body: body)
            }
            return await self.startRollout(
                account: account, environment: environment, plan, precondition: precondition, author: author, options: options)
        }
    }

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
        do throws(StoreError) {
            let recorded = try await store.startRollout(
                account: account, environment: environment.text, author: author,
                audit: AuditContext.current?.entry(action: "rollout.start", account: account, status: 201)
            ) { (id, current, latest, availability) throws(RolloutError) in
                try Rollout.start(
                    plan,
                    in: RolloutStartContext(
                        account: account, environment: environment, id: id, current: current, latest: latest,
                        precondition: precondition, now: Self.now, availability: { availability[$0] ?? .missing }))
            }
            await publish(recorded)
            return rolloutAnswer(recorded.rollout, status: 201)
        } catch {
            return storeProblem(error)
        }
    }

    /// `POST …/layout/promote`: `to` points at `from`'s version (`If-Match` against `to`'s), or a rollout of it starts.
    func promoteRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let account = match["account"]
        guard isValidAccountName(account) else { return .response(Problem.invalidAccount.response) }
        let promotion: PromotionRequest
        do throws(RolloutError) {
            promotion = try PromotionRequest.decode(request.body, environments: environmentList, now: Self.now)
        } catch {
            return .response(Problem.rollout(error).response)
        }
        // The route's check covered the account; the environment a promotion changes is its body's `to`.
        if let grant = match.grant, !grant.covers(environment: promotion.to.text) {
            let refusal = AccessRefusal.insufficientScope(.deploy, .environment(promotion.to.text))
            auditRefusal(refusal, grant: grant, request, account: account)
            return .response(Self.refusalResponse(refusal))
        }
        let options: WriteOptions
        switch writeOptions(request, match, environment: promotion.to) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let precondition = writePrecondition(request)
        let author = match.author
        let body = request.body
        return .deferred {
            if !options.applying, let required = self.reviewRequired(in: promotion.to, options) {
                let version = self.snapshot(for: promotion.from).record(account).flatMap { $0.deleted ? nil : $0.version }
                let misses: [BuildMiss]
                do throws(StoreError) {
                    misses = try await self.gateMisses(account: account, version: version, in: promotion.to)
                } catch {
                    return self.storeProblem(error)
                }
                return await self.holdForReview(
                    action: "layout.promote", account: account, environment: promotion.to, version: version, precondition: precondition,
                    author: author, required: required, applyAt: options.applyAtMillis, misses: misses, body: body)
            }
            return await self.promote(account: account, promotion, precondition: precondition, author: author, options: options)
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
        do throws(StoreError) {
            let outcome = try await store.promote(
                account: account, from: promotion.from.text, to: promotion.to.text, author: author,
                audit: AuditContext.current?.entry(action: "layout.promote", account: account, status: 200)
            ) { (source, id, current, latest, availability) throws(RolloutError) in
                try promotion.decide(
                    account: account, fromPointer: source,
                    context: RolloutStartContext(
                        account: account, environment: promotion.to, id: id, current: current, latest: latest,
                        precondition: precondition, now: Self.now, availability: { availability[$0] ?? .missing }))
            }
            switch outcome {
            case .unchanged(let record):
                return written(record, status: 200)
            case .moved(let record, let created):
                await publishPromotion(record, from: promotion.from.text, to: promotion.to, author: author, atMillis: currentTimeMillis())
                return written(record, status: created ? 201 : 200)
            case .rollout(let recorded):
                await publish(recorded)
                return rolloutAnswer(recorded.rollout, status: 201)
            }
        } catch {
            return storeProblem(error)
        }
    }

    /// `POST /v1/strings/{locale}/promote`: `to` points at `from`'s version of the table (`If-Match` against `to`'s).
    func promoteStringsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let locale = match["locale"]
        guard isValidLocale(locale) else { return .response(Self.badLocale(locale).response) }
        let promotion: PromotionRequest
        do throws(RolloutError) {
            promotion = try PromotionRequest.decode(request.body, environments: environmentList, allowsRollout: false, now: Self.now)
        } catch {
            return .response(Problem.rollout(error).response)
        }
        if let grant = match.grant, !grant.covers(environment: promotion.to.text) {
            let refusal = AccessRefusal.insufficientScope(.deploy, .environment(promotion.to.text))
            auditRefusal(refusal, grant: grant, request, account: nil)
            return .response(Self.refusalResponse(refusal))
        }
        let options: WriteOptions
        switch writeOptions(request, match, environment: promotion.to) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let precondition = writePrecondition(request)
        let author = match.author
        let body = request.body
        return .deferred {
            if let required = self.reviewRequired(in: promotion.to, options) {
                // Its precondition is checked now against the table `to` serves, as a held strings write's is.
                do throws(StoreError) {
                    try precondition.checkWrite(current: self.snapshot(for: promotion.to).stringsRecords[locale]?.etag)
                } catch {
                    return self.storeProblem(error)
                }
                return await self.holdForReview(
                    action: "strings.promote", account: "", environment: promotion.to, version: nil, precondition: precondition,
                    author: author, required: required, applyAt: options.applyAtMillis, misses: [], body: body,
                    strings: (locale, "application/json"))
            }
            return await self.promoteStrings(locale: locale, promotion, precondition: precondition, author: author)
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
                    atMillis: currentTimeMillis())
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

    /// `GET …/layout/rollout`: the newest rollout, with the answers per arm of every replica.
    func readRolloutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let (account, environment): (String, EnvironmentName)
        switch rolloutTarget(request, match) {
        case .success(let target): (account, environment) = target
        case .failure(let problem): return .response(problem.response)
        }
        return .deferred {
            do throws(StoreError) {
                // This replica's counts stored first, so that the sum is up to now here and within seconds elsewhere.
                await self.storeServedCounts()
                guard let (rollout, served) = try await self.store.latestRollout(account: account, environment: environment.text) else {
                    return Problem.rollout(.notFound(.rollout(account: account, environment: environment.text))).response
                }
                return self.rolloutAnswer(rollout, status: 200, served: served)
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    /// The change `action` (`rollout.patch`, `rollout.complete` or `rollout.rollback`) with `body` makes to the newest
    /// rollout as stored. - Throws: ``RolloutError/invalidBody(_:)`` for a body that does not read.
    static func rolloutChange(_ action: String, body: [UInt8]) throws(RolloutError)
        -> @Sendable (Rollout) throws(RolloutError) ->
        RolloutChange
    {
        switch action {
        case "rollout.patch":
            let patch = try RolloutPatch.decode(body)
            return { (rollout) throws(RolloutError) in try rollout.patched(patch, at: TabService.now) }
        case "rollout.complete":
            return { (rollout) throws(RolloutError) in try rollout.completed(at: TabService.now) }
        default:
            let reason = try RollbackRequest.reason(from: body)
            return { (rollout) throws(RolloutError) in try rollout.rolledBack(reason: reason, at: TabService.now) }
        }
    }

    /// Whether a rollout change gives the candidate to more installs (a raise, a completion): checked by the builds
    /// gate and held for review in a protected environment. A pause, a resume and a rollback never are.
    static func rolloutChangeMoves(_ action: String, body: [UInt8]) -> Bool {
        action == "rollout.complete" || (action == "rollout.patch" && (try? RolloutPatch.decode(body))?.percent != nil)
    }

    /// `PATCH …/layout/rollout`, `POST …/rollout/complete` and `POST …/rollout/rollback`: one change of the newest
    /// rollout (``rolloutChange(_:body:)``) on the rollout as stored.
    func changeRolloutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch, action: String) -> HTTPReply {
        let (account, environment): (String, EnvironmentName)
        switch rolloutTarget(request, match) {
        case .success(let target): (account, environment) = target
        case .failure(let problem): return .response(problem.response)
        }
        let change: @Sendable (Rollout) throws(RolloutError) -> RolloutChange
        do throws(RolloutError) {
            change = try Self.rolloutChange(action, body: request.body)
        } catch {
            return .response(Problem.rollout(error).response)
        }
        let author = match.author
        guard Self.rolloutChangeMoves(action, body: request.body) else {
            return .deferred {
                await self.changeRollout(account: account, environment: environment, action: action, author: author, change)
            }
        }
        let options: WriteOptions
        switch writeOptions(request, match, environment: environment) {
        case .success(let chosen): options = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let body = request.body
        let candidate = snapshot(for: environment).contents.rollouts[account]?.rollout.candidateVersion
        return .deferred {
            if !options.applying, let required = self.reviewRequired(in: environment, options) {
                let misses: [BuildMiss]
                do throws(StoreError) {
                    misses = try await self.gateMisses(account: account, version: candidate, in: environment)
                } catch {
                    return self.storeProblem(error)
                }
                return await self.holdForReview(
                    action: action, account: account, environment: environment, version: candidate, precondition: .none, author: author,
                    required: required, applyAt: options.applyAtMillis, misses: misses, body: body)
            }
            // The gate again: builds declared since the rollout started must open what more installs will get.
            if !options.allowIncompatible, let candidate,
                let refused = await self.gate(account: account, version: candidate, in: environment)
            {
                return refused
            }
            return await self.changeRollout(account: account, environment: environment, action: action, author: author, change)
        }
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
    func rolloutAnswer(_ rollout: Rollout, status: Int, served: ServedCounts? = nil) -> HTTPResponse {
        let document = rollout.document(at: Self.now, served: served ?? armCounts.served(rollout))
        return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")], body: document.json)
    }

    /// Makes a recorded rollout change visible: the snapshot serves the rollout as recorded (and the candidate once
    /// completed), its transitions go to `/v1/events`, and held long-polls of the account are woken (each answers
    /// only when its own representation changed: the installs a step moved).
    func publish(_ recorded: RecordedRollout) async {
        guard !recorded.transitions.isEmpty || recorded.pointed != nil else { return }
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
        for environment in environmentList.names {
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
