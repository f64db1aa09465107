import Logging
import Synchronization
import TabDelivery
import TabGuard
import TabStore
import TabTime

/// How much the apps' reports may cost (docs/security.md, "Reports from the apps").
struct ReportLimits: Sendable {
    /// New install ids one client address may bring into one rollout (or version) on this replica; 0 = no limit.
    var installsPerAddress: Int
    /// Report requests per client address per minute on this replica; 0 = no limit.
    var requestsPerMinute: Int
    /// Counted rows (install × kind × tab) per rollout arm or version: beyond it new rows are ignored.
    var rowsPerArm: Int
    /// How long a finished rollout's or a version's counts are kept after the last report, in days.
    var retentionDays: Int
}

/// This replica's side of the apps' reports: the per-address limits, the rollouts whose counts changed since the guard
/// last looked (``evaluate(_:)`` looks every quarter second), and the counters `/metrics` shows. The counts themselves
/// are the store's, shared by every replica; nothing here is on the read path of `…/tabs`.
final class ReportLedger: Sendable {
    let limits: ReportLimits

    private struct State {
        /// By address and subject: the installs the address brought in.
        var installsByAddress: [String: Set<String>] = [:]
        /// By address: requests in the current minute.
        var requests: [String: Int] = [:]
        var minute: Int64 = 0
        /// Rollouts whose counts grew since the last evaluation (their health read again, their guard applied).
        var dirty: [ReportSubject: RolloutKey] = [:]
        /// `tabserver_client_reports_total`: by (account, environment, arm, kind).
        var reportsTotal: [MetricKey: Int] = [:]
        /// `tabserver_client_report_installs`: the distinct installs of the rollouts under way, as last read.
        var installs: [ReportSubject: (account: String, environment: String, health: [String: ArmHealth])] = [:]
    }

    struct RolloutKey: Hashable, Sendable {
        var account: String
        var environment: EnvironmentName
        var id: Int
    }

    struct MetricKey: Hashable, Sendable, Comparable {
        var account: String
        var environment: String
        var arm: String
        var kind: String

        static func < (lhs: MetricKey, rhs: MetricKey) -> Bool {
            (lhs.account, lhs.environment, lhs.arm, lhs.kind) < (rhs.account, rhs.environment, rhs.arm, rhs.kind)
        }
    }

    private let state = Mutex(State())

    init(limits: ReportLimits) { self.limits = limits }

    /// What the per-address limits say of a request from `address` bringing `install` into `subject`: nil when it
    /// may go on (and it is counted against the limits), else the seconds to wait (`Retry-After`).
    func admit(address: String, install: String, subject: ReportSubject, nowMillis: Int64) -> Int? {
        state.withLock { state in
            let minute = nowMillis / 60_000
            if minute != state.minute {
                state.minute = minute
                state.requests.removeAll(keepingCapacity: true)
            }
            if limits.requestsPerMinute > 0 {
                let count = state.requests[address, default: 0]
                if count >= limits.requestsPerMinute { return Int(60 - (nowMillis / 1000) % 60) }
                state.requests[address] = count + 1
            }
            guard limits.installsPerAddress > 0 else { return nil }
            let key = address + " " + subject.account + " " + subject.environment + " " + subject.key
            var installs = state.installsByAddress[key] ?? []
            if installs.contains(install) { return nil }
            if installs.count >= limits.installsPerAddress { return 3600 }
            // The map is forgotten whole past a bound: a limit a replica forgets is looser, never stricter.
            if state.installsByAddress.count >= 100_000 { state.installsByAddress.removeAll() }
            installs.insert(install)
            state.installsByAddress[key] = installs
            return nil
        }
    }

    /// Counts the reports for `/metrics` and marks their rollout for the next evaluation.
    func noteCounted(_ batches: [ReportBatch], reports: [(arm: String, kind: ReportKind)], rollout: RolloutKey?, subject: ReportSubject) {
        state.withLock { state in
            for report in reports {
                let key = MetricKey(account: subject.account, environment: subject.environment, arm: report.arm, kind: report.kind.rawValue)
                state.reportsTotal[key, default: 0] += 1
            }
            if let rollout, !batches.isEmpty { state.dirty[subject] = rollout }
        }
    }

    /// Applies the guards of the rollouts whose counts grew: reads both arms' health from the store (every replica's
    /// reports) and, when the guard trips, records its pause or rollback once (the store's conditional update: of
    /// replicas racing, one records it and the others find the rollout paused or ended).
    func evaluate(_ changes: Changes) async {
        let due = state.withLock { state in
            let due = state.dirty
            state.dirty.removeAll()
            return due
        }
        for (subject, key) in due {
            await evaluate(subject, key, changes)
        }
    }

    private func evaluate(_ subject: ReportSubject, _ key: RolloutKey, _ changes: Changes) async {
        let health: [String: ArmHealth]
        do throws(StoreError) {
            health = try await changes.store.reportHealth(subject)
        } catch {
            changes.logger.error("reading the reports of rollout \(key.id) of \(key.account): \(error)")
            // Looked at again with the next report.
            return
        }
        remember(health, of: subject)
        guard let served = changes.snapshot(for: key.environment).contents.rollouts[key.account]?.rollout, served.id == key.id else {
            return
        }
        let candidate = health["candidate"] ?? .empty
        let stable = health["stable"] ?? .empty
        let now = changes.clock.now
        guard served.guarded(candidate: candidate, stable: stable, at: now) != nil else { return }
        let clock = changes.clock
        do throws(StoreError) {
            let recorded = try await changes.store.changeRollout(
                account: key.account, environment: key.environment.text, author: Changes.clockAuthor, audit: nil
            ) { stored in
                stored.id == key.id ? stored.guardChange(candidate: candidate, stable: stable, at: clock.now) : RolloutChange.none(stored)
            }
            guard !recorded.transitions.isEmpty else { return }
            let reason = recorded.transitions.last?.reason ?? ""
            changes.logger.notice(
                "rollout guard tripped",
                metadata: [
                    "account": "\(key.account)", "environment": "\(key.environment.text)", "rollout": "\(key.id)",
                    "state": "\(recorded.rollout.status(at: now).state.rawValue)", "reason": "\(reason)",
                ])
            await changes.publish(recorded)
        } catch .refused {
            // Ended or paused meanwhile (another replica's guard, an operator): nothing to do.
        } catch .conflict {
            try? await changes.loadRollouts(account: key.account)
        } catch {
            changes.logger.error("applying the guard of rollout \(key.id) of \(key.account): \(error)")
            state.withLock { $0.dirty[subject] = key }
        }
    }

    /// Deletes the counts no rollout under way needs and no report added to for ``ReportLimits/retentionDays``.
    func prune(_ changes: Changes) async {
        let keep = Set(
            changes.publisher.snapshot.everyRollout.map {
                ReportSubject.rollout(account: $0.rollout.account, environment: $0.rollout.environment.text, id: $0.rollout.id)
            })
        let before = changes.clock.unixMillis - Int64(limits.retentionDays) * 86_400_000
        do throws(StoreError) {
            let deleted = try await changes.store.pruneReports(olderThanMillis: before, keep: keep)
            if deleted > 0 { changes.logger.info("pruned \(deleted) report counts older than \(limits.retentionDays) days") }
        } catch {
            changes.logger.error("pruning report counts: \(error)")
        }
        state.withLock { state in
            state.installs = state.installs.filter { keep.contains($0.key) }
        }
    }

    /// Keeps an arm's health for `tabserver_client_report_installs`.
    func remember(_ health: [String: ArmHealth], of subject: ReportSubject) {
        state.withLock { state in
            state.installs[subject] = (subject.account, subject.environment, health)
            // A bound on what the gauge lists: the newest subjects stay.
            if state.installs.count > 10_000 { state.installs.removeAll() }
        }
    }

    /// The metrics' lines.
    func metricsText() -> String {
        let (totals, installs) = state.withLock { ($0.reportsTotal, $0.installs) }
        var out = "# HELP tabserver_client_reports_total Reports from the apps counted on this replica, by rollout arm and kind.\n"
        out += "# TYPE tabserver_client_reports_total counter\n"
        for (key, count) in totals.sorted(by: { $0.key < $1.key }) {
            out += "tabserver_client_reports_total{\(Self.labels(key))} \(count)\n"
        }
        out += "# HELP tabserver_client_report_installs Distinct installs that reported, by rollout arm and kind (every replica's).\n"
        out += "# TYPE tabserver_client_report_installs gauge\n"
        var gauges: [MetricKey: Int] = [:]
        for (_, entry) in installs {
            for (arm, health) in entry.health {
                for (kind, count) in health.byKind {
                    let key = MetricKey(account: entry.account, environment: entry.environment, arm: arm, kind: kind.rawValue)
                    gauges[key, default: 0] += count
                }
            }
        }
        for (key, count) in gauges.sorted(by: { $0.key < $1.key }) {
            out += "tabserver_client_report_installs{\(Self.labels(key))} \(count)\n"
        }
        return out
    }

    private static func labels(_ key: MetricKey) -> String {
        "account=\"\(escape(key.account))\",environment=\"\(escape(key.environment))\",arm=\"\(key.arm)\",kind=\"\(key.kind)\""
    }

    private static func escape(_ text: String) -> String {
        text.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n")
    }
}
