import Foundation
import Logging
import MicroHTTPD
import ProblemDocument
import TabDelivery
import TabGuard
import TabJSON
import TabStore

/// The apps' reports (docs/rollouts.md, "Guarded rollouts"): `POST …/tabs/reports` on the client plane, counted in
/// the store per rollout arm (the server decides the arm), and `GET …/layout/health` for a version outside rollouts.
struct ReportRoutes: RouteCollection {
    /// The store, the published rollouts and the guard's change (``Changes/publish(_:)``).
    let changes: Changes
    let ledger: ReportLedger
    /// Who the client is behind the trusted proxies (the limits are per address).
    let addresses: ClientAddresses

    static let healthAnswer = APIOperation.json(
        "Each arm's reporting installs, failing installs, installs per kind and per failing tab.",
        .object(additionalProperties: .object(required: ["installs", "failed", "byKind", "byTab"])))

    static let routes: [Route<ReportRoutes>] = [
        Route(
            .post, "/v1/accounts/{account}/tabs/reports", .open, label: "tabs_reports", changesState: false,
            inputs: [ClientPlaneRoutes.Inputs.environment, ClientPlaneRoutes.Inputs.environmentHeader], touchesStore: true,
            APIOperation(
                "What an install says about the versions it was given; counted once per install, kind and tab to the arm the server computes.",
                body: .object(
                    [
                        "installId": .string(maxLength: 128), "platform": .string(), "appVersion": .string(),
                        "reports": .array(
                            .object(
                                [
                                    "version": .integer(minimum: 1),
                                    "kind": .string(values: ["rendered", "tabFailed", "reverted", "refused"]),
                                    "tab": .string(), "reason": .string(maxLength: 200), "at": .string(format: "date-time"),
                                ], required: ["version", "kind"]), maxItems: 50),
                    ], required: ["installId", "reports"]),
                responses: [
                    (
                        202,
                        APIOperation.json(
                            "Counted (accepted) or not (ignored, a version the install's arm does not serve).",
                            .object(["accepted": .integer(), "ignored": .integer()], required: ["accepted", "ignored"]))
                    )
                ], problems: [400, 404, 413, 415, 422, 429, 503])
        ) { routes, request, match throws(Problem) in try routes.reportsRoute(request, match) },
        Route(
            .get, "/v1/accounts/{account}/layout/health", .scoped(.read, .account), label: "layout_health",
            inputs: [ManagementInputs.accountPath, ManagementInputs.environmentQuery], touchesStore: true,
            APIOperation(
                "What the apps reported about a version outside rollouts, by install.",
                parameters: [.query("version", .integer(minimum: 1), required: true)],
                responses: [(200, healthAnswer)], problems: [400, 404])
        ) { routes, request, match throws(Problem) in try routes.healthRoute(request, match) },
    ]

    /// `POST …/tabs/reports`: the body read whole (nothing counted from a bad one), the arm computed, the reports
    /// counted in one store transaction.
    func reportsRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let account = match["account"]
        let environment = try changes.environments.forClient(
            query: match.inputs.query("environment", as: EnvironmentChoice.self)?.text,
            header: match.inputs.header("Tabs-Environment", as: EnvironmentChoice.self)?.text)
        if request.body.count > ClientReports.maximumBodyBytes {
            throw Problem(.tooLarge, detail: "a report body has at most \(ClientReports.maximumBodyBytes) bytes")
        }
        let contentType = request.header("Content-Type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard contentType == "application/json" else {
            throw Problem(.unsupportedMediaType, detail: "reports are application/json")
        }
        let body: ClientReports
        do throws(RolloutError) {
            body = try ClientReports.decode(request.body)
        } catch {
            throw .rollout(error)
        }
        let now = changes.clock.now
        let snapshot = changes.snapshot(for: environment)
        let rollout = snapshot.contents.rollouts[account].map(\.rollout).flatMap {
            $0.isUnderWay(at: now) && $0.progress.started ? $0 : nil
        }
        let install = body.install
        var batches: [ReportBatch] = []
        var counted: [(arm: String, kind: ReportKind)] = []
        var rolloutKey: ReportLedger.RolloutKey?
        if let rollout {
            // The server decides the arm: a report counts only to the arm whose version it names.
            let arm: String
            let version: Int
            if rollout.testers.contains(install) {
                (arm, version) = ("testers", rollout.candidateVersion)
            } else {
                let chosen = rollout.arm(for: install, at: now)
                (arm, version) = (chosen.rawValue, chosen == .candidate ? rollout.candidateVersion : rollout.stableVersion)
            }
            let keys = body.reports.filter { $0.version == version }.map { ReportBatch.ReportKey(kind: $0.kind, tab: $0.tab ?? "") }
            counted = keys.map { (arm, $0.kind) }
            if !keys.isEmpty {
                batches.append(
                    ReportBatch(
                        subject: .rollout(account: account, environment: environment.text, id: rollout.id), arm: arm, install: install.text,
                        reports: keys))
            }
            rolloutKey = ReportLedger.RolloutKey(account: account, environment: environment, id: rollout.id)
        } else {
            // Outside a rollout each report counts to the version it names, one the account has published here.
            let latest = snapshot.record(account)?.version ?? 0
            var byVersion: [Int: [ReportBatch.ReportKey]] = [:]
            for report in body.reports where report.version <= latest {
                byVersion[report.version, default: []].append(ReportBatch.ReportKey(kind: report.kind, tab: report.tab ?? ""))
                counted.append(("version", report.kind))
            }
            batches = byVersion.keys.sorted().map { version in
                ReportBatch(
                    subject: .version(account: account, environment: environment.text, version: version), arm: "version",
                    install: install.text, reports: byVersion[version] ?? [])
            }
        }
        let address = addresses.address(of: request)
        for batch in batches {
            if let wait = ledger.admit(address: address, install: install.text, subject: batch.subject, nowMillis: changes.clock.unixMillis)
            {
                throw Problem(
                    .tooManyReports,
                    detail: "this address sent more reports or named more installs than --report-installs-per-address allows",
                    headers: [HTTPHeader("Retry-After", String(wait))])
            }
        }
        let ignored = body.reports.count - counted.count
        let accepted = counted
        let under = rolloutKey
        let counting = batches
        return .later {
            do throws(StoreError) {
                _ = try await self.changes.store.countReports(counting, cap: self.ledger.limits.rowsPerArm)
            } catch {
                return self.changes.storeProblem(error)
            }
            if let subject = counting.first?.subject {
                self.ledger.noteCounted(counting, reports: accepted, rollout: under, subject: subject)
            }
            return json(202, ["accepted": .integer(Int64(accepted.count)), "ignored": .integer(Int64(ignored))])
        }
    }

    /// `GET …/layout/health?version=N`: what the apps reported about a version outside rollouts.
    func healthRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let account = ManagementInputs.account(match)
        let environment = try ManagementInputs.environment(match, in: changes.environments)
        guard let text = request.query("version"), let version = Int(text), version >= 1 else {
            throw .badRequest("give ?version=N, a version number from 1")
        }
        return .later {
            do throws(StoreError) {
                let health = try await self.changes.store.reportHealth(
                    .version(account: account, environment: environment.text, version: version))
                return HTTPResponse(
                    status: 200, headers: [HTTPHeader("Content-Type", "application/json")],
                    body: HealthDocument(arms: ["version": health["version"] ?? .empty]).json)
            } catch {
                return self.changes.storeProblem(error)
            }
        }
    }
}
