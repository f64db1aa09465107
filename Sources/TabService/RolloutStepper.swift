import Logging
import MicroHTTPD
import TabAccess
import TabDelivery
import TabLayout
import TabStore

/// What the clock does to rollouts: every quarter second each replica looks at the rollouts it serves and records the
/// steps (a start at `startAt`, each hold's end, the completion) that are due. The store records each once: the
/// update is conditional on the revision read, under the writers' lock, so of replicas racing to record a step one
/// does and the others find it recorded (and reload it). Each replica also stores its answers per arm every two
/// seconds, for `served` in `GET …/rollout`.
extension TabService {
    /// Starts the stepper (until the service stops).
    func startRolloutStepper() {
        Task.detached { [weak self] in
            var lastFlush = ContinuousClock.now
            while true {
                try? await Task.sleep(for: .milliseconds(250))
                guard let service = self, !service.stopping.load(ordering: .relaxed) else { return }
                await service.changes.recordDueSteps()
                if ContinuousClock.now - lastFlush >= .seconds(2) {
                    lastFlush = .now
                    await service.changes.storeServedCounts()
                }
            }
        }
    }

    /// `/metrics`' rollout gauges: the percent and the state of every rollout under way in the served environment (1 on
    /// the state it is in), and this replica's answers per arm.
    func rolloutGauges() -> String {
        let now = TabService.now
        var out = "# HELP tabserver_rollout_percent The share of installs that get a rollout's candidate.\n"
        out += "# TYPE tabserver_rollout_percent gauge\n"
        let served = snapshot.everyRollout.sorted {
            ($0.rollout.account, $0.rollout.environment) < ($1.rollout.account, $1.rollout.environment)
        }
        var states = ""
        var answers = ""
        var errors = ""
        for rollout in served {
            let status = rollout.rollout.status(at: now)
            let labels = "account=\"\(rollout.rollout.account)\",environment=\"\(rollout.rollout.environment.text)\""
            out += "tabserver_rollout_percent{\(labels)} \(status.percent)\n"
            for state in [RolloutState.scheduled, .running, .paused] {
                states += "tabserver_rollout_state{\(labels),state=\"\(state.rawValue)\"} \(status.state == state ? 1 : 0)\n"
            }
            let counts = rollout.counts.served
            answers += "tabserver_rollout_answers_total{\(labels),arm=\"candidate\"} \(counts.candidate)\n"
            answers += "tabserver_rollout_answers_total{\(labels),arm=\"stable\"} \(counts.stable)\n"
            errors += "tabserver_rollout_server_errors_total{\(labels)} \(rollout.counts.serverErrors.load(ordering: .relaxed))\n"
        }
        out += "# HELP tabserver_rollout_state 1 on the state a rollout under way is in.\n# TYPE tabserver_rollout_state gauge\n" + states
        out += "# HELP tabserver_rollout_answers_total Answers per rollout arm on this replica.\n"
        out += "# TYPE tabserver_rollout_answers_total counter\n" + answers
        out += "# HELP tabserver_rollout_server_errors_total Client-plane 5xx answers for a rollout's account on this replica.\n"
        out += "# TYPE tabserver_rollout_server_errors_total counter\n" + errors
        return out
    }

    /// `POST /v1/alerts`: Alertmanager's payload; each firing alert with an `account` label rolls back that
    /// account's running rollouts (in its `environment` label's environment when it has one), reason
    /// `"{alertname}: {summary}"`. Resolved alerts change nothing. Each rollback is authorized as the rollback
    /// route would authorize it (the token's accounts and environments); refused ones are listed in `refused` and
    /// audited, and the answer is 403 when every rollback asked for was refused.
    func alertsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let payload: AlertmanagerPayload
        do throws(RolloutError) {
            payload = try AlertmanagerPayload.decode(request.body)
        } catch {
            return .response(Problem.rollout(error).response)
        }
        let author = match.author
        let grant = match.grant
        let refusalEntry = RefusalEntryMaker(self, request, grant: grant)
        return .deferred {
            var rolledBack: [JSONValue] = []
            var refused: [JSONValue] = []
            var lastRefusal: AccessRefusal?
            do throws(StoreError) {
                let underWay = try await self.store.rolloutsUnderWay()
                for (rollout, reason) in payload.rollbacks(among: underWay, at: TabService.now) {
                    let named: [String: JSONValue] = [
                        "account": .string(rollout.account), "environment": .string(rollout.environment.text),
                        "rollout": .integer(Int64(rollout.id)),
                    ]
                    let access = AccessRequest(scope: .rollback, target: .account(rollout.account), environment: rollout.environment.text)
                    if let refusal = grant?.authorize(access) {
                        self.bufferRefusal(refusalEntry.entry(refusal, account: rollout.account, environment: rollout.environment.text))
                        refused.append(.object(named.merging(["reason": .string(refusal.clientDescription)]) { $1 }))
                        lastRefusal = refusal
                        continue
                    }
                    do throws(StoreError) {
                        let recorded = try await self.store.changeRollout(
                            account: rollout.account, environment: rollout.environment.text, author: author,
                            audit: AuditContext.current?.entry(action: "rollout.rollback", account: rollout.account, status: 200)
                        ) { (stored) throws(RolloutError) in try stored.rolledBack(reason: reason, at: TabService.now) }
                        await self.changes.publish(recorded)
                        rolledBack.append(.object(named.merging(["reason": .string(reason)]) { $1 }))
                    } catch .refused {
                        continue  // it ended meanwhile
                    }
                }
            } catch {
                return self.storeProblem(error)
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
