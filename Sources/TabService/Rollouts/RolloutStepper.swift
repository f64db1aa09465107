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
extension Changes {
    /// The author of the changes the clock makes, in history and events.
    static let clockAuthor = "tabserver"

    /// Records the due transitions of every rollout the snapshot serves.
    func recordDueSteps() async {
        let now = clock.now
        let clock = clock
        for served in publisher.snapshot.everyRollout where !served.rollout.advanced(to: now).transitions.isEmpty {
            let rollout = served.rollout
            do throws(StoreError) {
                let recorded = try await store.changeRollout(
                    account: rollout.account, environment: rollout.environment.text, author: Self.clockAuthor, audit: nil
                ) { stored in stored.advanced(to: clock.now) }
                await publish(recorded)
            } catch .conflict {
                // Another replica recorded it first: serve what it recorded.
                try? await loadRollouts(account: rollout.account)
            } catch {
                metrics.storeErrors.add()
                logger.error("recording rollout \(rollout.id) of \(rollout.account): \(error)")
            }
        }
    }

    /// Stores this replica's answers per arm of the rollouts it serves.
    func storeServedCounts() async {
        let counts = publisher.snapshot.everyRollout.map { ($0.rollout, $0.counts.served) }
        do throws(StoreError) {
            try await store.saveServed(counts, replica: replicaID)
        } catch {
            logger.error("storing rollout answer counts failed: \(error)")
        }
    }

    /// `/metrics`' rollout gauges: the percent and the state of every rollout under way in the served environment (1 on
    /// the state it is in), and this replica's answers per arm.
    func rolloutGauges() -> String {
        let now = clock.now
        var out = "# HELP tabserver_rollout_percent The share of installs that get a rollout's candidate.\n"
        out += "# TYPE tabserver_rollout_percent gauge\n"
        let served = publisher.snapshot.everyRollout.sorted {
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

}
