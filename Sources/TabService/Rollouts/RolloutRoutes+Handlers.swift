import Logging
import MicroHTTPD
import TabAccess
import TabBuilds
import TabDelivery
import TabGuard
import TabLayout
import TabReview
import TabStore

/// The handlers of "Environments and rollouts" (docs/rollouts.md): a rollout started, read, raised or paused, completed or rolled
/// back, and Alertmanager's alerts that roll rollouts back. The decisions are TabDelivery's; the store records each
/// change once (conditional on the revision read); ``Changes`` publishes what was recorded.
extension RolloutRoutes {
    /// The account and environment a rollout route names.
    private func rolloutTarget(_ match: RouteMatch) throws(Problem) -> (String, EnvironmentName) {
        (ManagementInputs.account(match), try ManagementInputs.environment(match, in: changes.environments))
    }

    /// `POST …/layout/rollout`: the plan checked, then started against the environment's pointer (`If-Match`).
    func startRolloutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let (account, environment) = try rolloutTarget(match)
        // The plan is checked now (400); the command keeps the request's body, read again when it runs.
        do throws(RolloutError) {
            _ = try RolloutPlan.decode(request.body, now: changes.clock.now)
        } catch {
            throw .rollout(error)
        }
        let options = try ManagementInputs.writeOptions(match, account: account, environment: environment, clock: changes.clock)
        let order = ChangeOrder(
            .rolloutStart(body: String(decoding: request.body, as: UTF8.self)), account: account, environment: environment,
            precondition: ManagementInputs.precondition(match), author: match.author, options: options)
        return .deferred { await self.changes.run(order) }
    }

    /// The options of a promotion; 403 (audited) unless the token may `deploy` to its `to` and `read` its `from`: the
    /// route's check covered the account (or every account), the environments a promotion touches are its body's.
    private func promotionOptions(
        _ promotion: PromotionRequest, _ request: borrowing HTTPRequest, _ match: RouteMatch, account: String?
    ) throws(Problem) -> WriteOptions {
        if let grant = match.grant {
            let target: AccessRequest.Target = account.map(AccessRequest.Target.account) ?? .allAccounts
            if let refusal = grant.authorize(AccessRequest(scope: .deploy, target: target, environment: promotion.to.text))
                ?? grant.authorize(AccessRequest(scope: .read, target: target, environment: promotion.from.text))
            {
                audit.refuse(refusal, grant: grant, request, account: account)
                throw .refused(refusal)
            }
        }
        return try ManagementInputs.writeOptions(match, account: account ?? "", environment: promotion.to, clock: changes.clock)
    }

    /// `POST …/layout/promote`: `to` points at `from`'s version (`If-Match` against `to`'s), or a rollout of it starts.
    func promoteRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let account = ManagementInputs.account(match)
        let promotion: PromotionRequest
        do throws(RolloutError) {
            promotion = try PromotionRequest.decode(request.body, environments: changes.environments, now: changes.clock.now)
        } catch {
            throw .rollout(error)
        }
        let options = try promotionOptions(promotion, request, match, account: account)
        let order = ChangeOrder(
            .promotion(body: String(decoding: request.body, as: UTF8.self)), account: account, environment: promotion.to,
            precondition: ManagementInputs.precondition(match), author: match.author, options: options)
        return .deferred { await self.changes.run(order) }
    }

    /// `POST /v1/strings/{locale}/promote`: `to` points at `from`'s version of the table (`If-Match` against `to`'s).
    func promoteStringsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let locale = match.inputs.path("locale", as: LocaleTag.self).text
        let promotion: PromotionRequest
        do throws(RolloutError) {
            promotion = try PromotionRequest.decode(
                request.body, environments: changes.environments, allowsRollout: false, now: changes.clock.now)
        } catch {
            throw .rollout(error)
        }
        let options = try promotionOptions(promotion, request, match, account: nil)
        let order = ChangeOrder(
            .stringsPromotion(locale: locale, body: String(decoding: request.body, as: UTF8.self)), account: "", environment: promotion.to,
            precondition: ManagementInputs.precondition(match), author: match.author, options: options)
        return .deferred { await self.changes.run(order) }
    }

    /// `GET …/layout/rollout`: the newest rollout, with the answers per arm of every replica.
    func readRolloutRoute(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        let (account, environment) = try rolloutTarget(match)
        return .deferred {
            do throws(StoreError) {
                // This replica's counts stored first, so that the sum is up to now here and within seconds elsewhere.
                await self.changes.storeServedCounts()
                guard let (rollout, served) = try await self.changes.store.latestRollout(account: account, environment: environment.text)
                else {
                    return Problem.rollout(.notFound(.rollout(account: account, environment: environment.text))).response
                }
                let health = try await self.changes.store.reportHealth(
                    .rollout(account: account, environment: environment.text, id: rollout.id))
                var arms = ["candidate": health["candidate"] ?? .empty, "stable": health["stable"] ?? .empty]
                if !rollout.testers.isEmpty { arms["testers"] = health["testers"] ?? .empty }
                return self.changes.rolloutAnswer(rollout, status: 200, served: served, health: HealthDocument(arms: arms))
            } catch {
                return self.changes.storeProblem(error)
            }
        }
    }

    /// `PATCH …/layout/rollout`, `POST …/rollout/complete` and `POST …/rollout/rollback`: one change of the newest
    /// rollout (``rolloutChange(_:body:)``) on the rollout as stored.
    func changeRolloutRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch, action: String) throws(Problem) -> HTTPReply {
        let (account, environment) = try rolloutTarget(match)
        let change: @Sendable (Rollout) throws(RolloutError) -> RolloutChange
        do throws(RolloutError) {
            change = try changes.rolloutChange(action, body: request.body)
        } catch {
            throw .rollout(error)
        }
        let author = match.author
        guard Changes.rolloutChangeMoves(action, body: request.body) else {
            return .deferred {
                await self.changes.changeRollout(account: account, environment: environment, action: action, author: author, change)
            }
        }
        let options = try ManagementInputs.writeOptions(match, account: account, environment: environment, clock: changes.clock)
        let step: HeldCommand.RolloutStep = action == "rollout.complete" ? .complete : .raise
        let order = ChangeOrder(
            .rolloutChange(step, body: String(decoding: request.body, as: UTF8.self)), account: account, environment: environment,
            precondition: .none, author: author, options: options)
        return .deferred { await self.changes.run(order) }
    }

    /// `POST /v1/alerts`: Alertmanager's payload; each firing alert with an `account` label rolls back that
    /// account's running rollouts (in its `environment` label's environment when it has one), reason
    /// `"{alertname}: {summary}"`. Resolved alerts change nothing. Each rollback is authorized as the rollback
    /// route would authorize it (the token's accounts and environments); refused ones are listed in `refused` and
    /// audited, and the answer is 403 when every rollback asked for was refused.
    func alertsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let payload: AlertmanagerPayload
        do throws(RolloutError) {
            payload = try AlertmanagerPayload.decode(request.body)
        } catch {
            throw .rollout(error)
        }
        let author = match.author
        let grant = match.grant
        let refusalEntry = RefusalEntryMaker(audit.addresses, request, grant: grant, clock: changes.clock)
        return .deferred {
            var rolledBack: [JSONValue] = []
            var refused: [JSONValue] = []
            var lastRefusal: AccessRefusal?
            do throws(StoreError) {
                let underWay = try await self.changes.store.rolloutsUnderWay()
                for (rollout, reason) in payload.rollbacks(among: underWay, at: changes.clock.now) {
                    let named: [String: JSONValue] = [
                        "account": .string(rollout.account), "environment": .string(rollout.environment.text),
                        "rollout": .integer(Int64(rollout.id)),
                    ]
                    let access = AccessRequest(scope: .rollback, target: .account(rollout.account), environment: rollout.environment.text)
                    if let refusal = grant?.authorize(access) {
                        self.audit.buffer(refusalEntry.entry(refusal, account: rollout.account, environment: rollout.environment.text))
                        refused.append(.object(named.merging(["reason": .string(refusal.clientDescription)]) { $1 }))
                        lastRefusal = refusal
                        continue
                    }
                    do throws(StoreError) {
                        let recorded = try await self.changes.store.changeRollout(
                            account: rollout.account, environment: rollout.environment.text, author: author,
                            audit: AuditContext.current?.entry(action: "rollout.rollback", account: rollout.account, status: 200)
                        ) { (stored) throws(RolloutError) in try stored.rolledBack(reason: reason, at: changes.clock.now) }
                        await self.changes.publish(recorded)
                        rolledBack.append(.object(named.merging(["reason": .string(reason)]) { $1 }))
                    } catch .refused {
                        continue  // it ended meanwhile
                    }
                }
            } catch {
                return self.changes.storeProblem(error)
            }
            if rolledBack.isEmpty, let lastRefusal {
                var problem = Problem(
                    .insufficientScope, detail: "the token may roll back none of the \(refused.count) rollouts the alerts name",
                    headers: [HTTPHeader("WWW-Authenticate", lastRefusal.wwwAuthenticate)])
                problem.extensions["refused"] = .array(refused)
                return problem.response
            }
            return json(200, ["rolledBack": .array(rolledBack), "refused": .array(refused)])
        }
    }
}
