import Foundation
import Synchronization
import TabAccess
import TabDelivery
import TabGuard
import TabTime
import TabWebhooks

/// A store in memory, for trials and tests: the same write rule as SQLite and PostgreSQL, gone at exit.
public final class MemoryStore: StoreBackend {
    struct State: Sendable {
        var layouts: [String: [StoredVersion]] = [:]
        var strings: [String: [StoredStrings]] = [:]
        var tokens: [String: StoredToken] = [:]
        var builds: [String: StoredBuild] = [:]
        var changeRequests: [String: (request: StoredChangeRequest, claimedBy: String?)] = [:]
        var audit: [AuditEntry] = []
        var lastAuditID: Int64 = 0
        var webhooks: [String: StoredWebhook] = [:]
        var deliveries: [String: StoredDelivery] = [:]
        /// By account, then environment: the version pointed at.
        var pointers: [String: [String: Int]] = [:]
        /// By account: every version an environment served.
        var servedVersions: [String: Set<ServedVersion>] = [:]
        /// By locale, then environment: the strings table version pointed at.
        var stringsPointers: [String: [String: Int]] = [:]
        /// By account and environment, oldest first.
        var rollouts: [String: [Rollout]] = [:]
        /// By rollout key, then replica.
        var served: [String: [String: ServedCounts]] = [:]
        /// By account, then version.
        var revocations: [String: [Int: StoredRevocation]] = [:]
        /// The apps' reports by subject: each row and when it was counted.
        var reports: [ReportSubject: [MemoryReportRow: Int64]] = [:]
    }

    private let state = Mutex(State())
    public let executor = StoreExecutor(label: "tabstore.memory")
    public let clock: TimeSource

    /// An empty store whose records are dated by `clock`.
    public init(clock: TimeSource = .system) { self.clock = clock }

    public func writeTransaction<R: Sendable>(_ body: (any StoreRows) throws(StoreError) -> R) throws(StoreError) -> R {
        try state.withLock { (state) throws(StoreError) -> R in
            let rows = MemoryRows(state, clock: clock)
            let result = try body(rows)
            state = rows.state  // committed only when the body returned
            return result
        }
    }

    public func readCurrentLayouts(environment: String) throws(StoreError) -> [StoredVersion] {
        state.withLock { state in
            state.pointers.compactMap { account, pointers in
                pointers[environment].flatMap { number in state.layouts[account]?.first { $0.version == number } }
            }.filter { !$0.deleted }.sorted { $0.account < $1.account }
        }
    }

    public func readLatest(account: String) throws(StoreError) -> StoredVersion? { state.withLock { $0.layouts[account]?.last } }

    public func readVersions(account: String) throws(StoreError) -> [StoredVersion] {
        state.withLock { ($0.layouts[account] ?? []).reversed() }
    }

    public func readVersion(account: String, number: Int) throws(StoreError) -> StoredVersion? {
        state.withLock { $0.layouts[account]?.first { $0.version == number } }
    }

    public func readCurrentStrings(environment: String) throws(StoreError) -> [StoredStrings] {
        state.withLock { state in
            state.stringsPointers.compactMap { locale, pointers in
                pointers[environment].flatMap { number in state.strings[locale]?.first { $0.version == number } }
            }.sorted { $0.locale < $1.locale }
        }
    }

    public func readTokens() throws(StoreError) -> [StoredToken] {
        state.withLock { $0.tokens.values.sorted { $0.id < $1.id } }
    }

    public func readAudit(afterID: Int64, limit: Int, account: String?, actor: String?) throws(StoreError) -> [AuditEntry] {
        state.withLock { state in
            Array(
                state.audit.filter { $0.id > afterID && (account == nil || $0.account == account) && (actor == nil || $0.actor == actor) }
                    .prefix(limit))
        }
    }

    public func readPing() -> Bool { true }
}

/// A write transaction over a copy of the memory store's state.
private final class MemoryRows: StoreRows {
    var state: MemoryStore.State
    let clock: TimeSource

    init(_ state: MemoryStore.State, clock: TimeSource) {
        self.state = state
        self.clock = clock
    }

    func latest(account: String) throws(StoreError) -> StoredVersion? { state.layouts[account]?.last }

    func latestStrings(locale: String) throws(StoreError) -> StoredStrings? { state.strings[locale]?.last }

    func version(account: String, number: Int) throws(StoreError) -> StoredVersion? {
        state.layouts[account]?.first { $0.version == number }
    }

    func deletedVersions(account: String) throws(StoreError) -> [Int] {
        (state.layouts[account] ?? []).filter(\.deleted).map(\.version)
    }

    func insert(_ record: StoredVersion) throws(StoreError) {
        guard (state.layouts[record.account]?.last?.version ?? 0) + 1 == record.version else { throw .conflict }
        state.layouts[record.account, default: []].append(record)
    }

    func insert(_ record: StoredStrings) throws(StoreError) {
        guard (state.strings[record.locale]?.last?.version ?? 0) + 1 == record.version else { throw .conflict }
        state.strings[record.locale, default: []].append(record)
    }

    func tokens() throws(StoreError) -> [StoredToken] { state.tokens.values.sorted { $0.id < $1.id } }

    func save(_ token: StoredToken, announce: Bool) throws(StoreError) { state.tokens[token.id] = token }

    func changeRequests() throws(StoreError) -> [StoredChangeRequest] {
        state.changeRequests.values.map(\.request).sorted { ($0.createdAtMillis, $0.id) < ($1.createdAtMillis, $1.id) }
    }

    func insert(changeRequest: StoredChangeRequest) throws(StoreError) {
        guard state.changeRequests[changeRequest.id] == nil else { throw .conflict }
        state.changeRequests[changeRequest.id] = (changeRequest, nil)
    }

    func update(changeRequest: StoredChangeRequest, expecting: String) throws(StoreError) -> Bool {
        guard state.changeRequests[changeRequest.id]?.request.state == expecting else { return false }
        state.changeRequests[changeRequest.id] = (changeRequest, nil)
        return true
    }

    func changeRequest(id: String) throws(StoreError) -> StoredChangeRequest? { state.changeRequests[id]?.request }

    func dueChangeRequests(atMillis: Int64, limit: Int) throws(StoreError) -> [StoredChangeRequest] {
        let due = state.changeRequests.values.compactMap { held -> (at: Int64, request: StoredChangeRequest)? in
            guard held.request.state == "approved", held.claimedBy == nil, let at = held.request.applyAtMillis, at <= atMillis
            else { return nil }
            return (at, held.request)
        }
        return due.sorted { ($0.at, $0.request.id) < ($1.at, $1.request.id) }.prefix(limit).map(\.request)
    }

    func nextChangeRequestApplyAt(after atMillis: Int64) throws(StoreError) -> Int64? {
        state.changeRequests.values.filter { $0.request.state == "approved" }.compactMap(\.request.applyAtMillis).filter { $0 > atMillis }
            .min()
    }

    func changeRequestCounts() throws(StoreError) -> [String: Int] {
        state.changeRequests.values.reduce(into: [:]) { $0[$1.request.state, default: 0] += 1 }
    }

    func pruneChangeRequests(finishedBefore beforeMillis: Int64, limit: Int) throws(StoreError) -> Int {
        let ended = state.changeRequests.values.map(\.request).filter { ($0.finishedAtMillis ?? .max) < beforeMillis }
        let pruned = ended.sorted { ($0.finishedAtMillis ?? 0) < ($1.finishedAtMillis ?? 0) }.prefix(limit)
        for request in pruned { state.changeRequests[request.id] = nil }
        return pruned.count
    }

    func update(changeRequest: StoredChangeRequest, replacing record: [UInt8]) throws(StoreError) -> Bool {
        guard state.changeRequests[changeRequest.id]?.request.record == record else { return false }
        state.changeRequests[changeRequest.id] = (changeRequest, nil)
        return true
    }

    func claim(changeRequest id: String, state wanted: String, by claimer: String) throws(StoreError) -> Bool {
        guard let held = state.changeRequests[id], held.request.state == wanted, held.claimedBy == nil else { return false }
        state.changeRequests[id]?.claimedBy = claimer
        return true
    }

    func revocations(account: String?) throws(StoreError) -> [StoredRevocation] {
        let accounts = account.map { [$0] } ?? state.revocations.keys.sorted()
        return accounts.flatMap { (state.revocations[$0] ?? [:]).values.sorted { $0.version < $1.version } }
    }

    func save(revocation: StoredRevocation) throws(StoreError) {
        state.revocations[revocation.account, default: [:]][revocation.version] = revocation
    }

    func builds() throws(StoreError) -> [StoredBuild] {
        state.builds.values.sorted { ($0.platform, $0.appVersion) < ($1.platform, $1.appVersion) }
    }

    func save(build: StoredBuild) throws(StoreError) -> Bool {
        let key = build.platform + " " + build.appVersion
        let previous = state.builds[key]
        var saved = build
        saved.lastSeenMillis = previous?.lastSeenMillis
        state.builds[key] = saved
        return previous != nil
    }

    func deleteBuild(platform: String, appVersion: String) throws(StoreError) -> Bool {
        state.builds.removeValue(forKey: platform + " " + appVersion) != nil
    }

    func markSeen(platform: String, appVersion: String, atMillis: Int64) throws(StoreError) {
        let key = platform + " " + appVersion
        guard let known = state.builds[key], (known.lastSeenMillis ?? .min) < atMillis else { return }
        state.builds[key]?.lastSeenMillis = atMillis
    }

    func insertAudit(_ entry: AuditEntry) throws(StoreError) {
        if let key = entry.coalescingKey, let index = state.audit.firstIndex(where: { $0.coalescingKey == key }) {
            state.audit[index].count += entry.count
            return
        }
        state.lastAuditID += 1
        var stored = entry
        stored.id = state.lastAuditID
        state.audit.append(stored)
    }

    func pruneAudit(beforeMillis millis: Int64, keepingNewest rows: Int64, limit: Int) throws(StoreError) -> Int {
        let newest = state.audit.last?.id ?? 0
        let doomed = Set(
            state.audit.filter { ($0.at.millis < millis || $0.id <= newest - rows) && $0.id < newest }.prefix(limit).map(\.id))
        state.audit.removeAll { doomed.contains($0.id) }
        return doomed.count
    }
}

extension MemoryRows {
    func webhooks() throws(StoreError) -> [StoredWebhook] {
        state.webhooks.values.sorted { ($0.createdAtMillis, $0.id) < ($1.createdAtMillis, $1.id) }
    }

    func save(_ webhook: StoredWebhook) throws(StoreError) {
        var saved = webhook
        if let old = state.webhooks[webhook.id] { (saved.createdAtMillis, saved.createdBy) = (old.createdAtMillis, old.createdBy) }
        state.webhooks[webhook.id] = saved
    }

    func deleteWebhook(id: String) throws(StoreError) -> Bool {
        guard state.webhooks.removeValue(forKey: id) != nil else { return false }
        state.deliveries = state.deliveries.filter { $0.value.delivery.webhookID != id }
        return true
    }

    func lastEventID() throws(StoreError) -> Int64 { state.deliveries.values.map(\.delivery.eventID).max() ?? 0 }

    func insert(_ delivery: StoredDelivery) throws(StoreError) {
        guard state.deliveries[delivery.delivery.id] == nil else { throw .conflict }
        state.deliveries[delivery.delivery.id] = delivery
    }

    func update(_ delivery: Delivery) throws(StoreError) { state.deliveries[delivery.id]?.delivery = delivery }

    func delivery(id: String) throws(StoreError) -> StoredDelivery? { state.deliveries[id] }

    func deliveries(webhookID: String, afterEvent: Int64, limit: Int) throws(StoreError) -> [StoredDelivery] {
        Array(
            state.deliveries.values.filter { $0.delivery.webhookID == webhookID && $0.delivery.eventID > afterEvent }
                .sorted { $0.delivery.eventID < $1.delivery.eventID }.prefix(limit))
    }

    func dueDeliveries(atMillis: Int64, perWebhook: Int, limit: Int) throws(StoreError) -> [StoredDelivery] {
        let now = Date(millis: atMillis)
        var taken: [String: Int] = [:]
        return Array(
            state.deliveries.values.filter { stored in
                stored.delivery.state == .pending && (stored.delivery.nextAttemptAt.map { $0 <= now } ?? false)
                    && state.webhooks[stored.delivery.webhookID]?.active == true
            }
            .sorted { ($0.delivery.nextAttemptAt ?? now, $0.delivery.eventID) < ($1.delivery.nextAttemptAt ?? now, $1.delivery.eventID) }
            .filter { stored in
                taken[stored.delivery.webhookID, default: 0] += 1
                return taken[stored.delivery.webhookID]! <= perWebhook
            }
            .prefix(limit))
    }

    func pruneFinishedDeliveries(beforeMillis: Int64, limit: Int) throws(StoreError) -> Int {
        let newest = try lastEventID()
        let doomed = state.deliveries.values.filter {
            [.delivered, .failed].contains($0.delivery.state) && $0.delivery.at.millis < beforeMillis && $0.delivery.eventID < newest
        }
        .sorted { $0.delivery.at < $1.delivery.at }.prefix(limit)
        for stored in doomed { state.deliveries[stored.delivery.id] = nil }
        return doomed.count
    }
}

extension MemoryRows {
    private static func key(_ rollout: Rollout) -> String { "\(rollout.account)\u{0}\(rollout.environment.text)\u{0}\(rollout.id)" }

    func pointer(account: String, environment: String) throws(StoreError) -> Int? { state.pointers[account]?[environment] }

    func stringsPointer(locale: String, environment: String) throws(StoreError) -> Int? { state.stringsPointers[locale]?[environment] }

    func setStringsPointer(locale: String, environment: String, version: Int) throws(StoreError) {
        state.stringsPointers[locale, default: [:]][environment] = version
    }

    func strings(locale: String, number: Int) throws(StoreError) -> StoredStrings? {
        state.strings[locale]?.first { $0.version == number }
    }

    func setPointer(account: String, environment: String, version: Int) throws(StoreError) {
        state.pointers[account, default: [:]][environment] = version
        try recordServed(account: account, environment: environment, version: version)
    }

    func recordServed(account: String, environment: String, version: Int) throws(StoreError) {
        state.servedVersions[account, default: []].insert(ServedVersion(environment: environment, version: version))
    }

    func servedVersions(account: String) throws(StoreError) -> [ServedVersion] {
        (state.servedVersions[account] ?? []).sorted { ($0.version, $1.environment) > ($1.version, $0.environment) }
    }

    func pointers(account: String) throws(StoreError) -> [String: Int] { state.pointers[account] ?? [:] }

    func accounts(extending account: String, environment: String) throws(StoreError) -> [String] {
        state.pointers.compactMap { name, pointers in
            guard let number = pointers[environment], let record = state.layouts[name]?.first(where: { $0.version == number }),
                !record.deleted, record.extends == account
            else { return nil }
            return name
        }
    }

    func latestRollout(account: String, environment: String) throws(StoreError) -> Rollout? {
        state.rollouts[account]?.last { $0.environment.text == environment }
    }

    func rolloutsUnderWay() throws(StoreError) -> [Rollout] {
        state.rollouts.keys.sorted().flatMap { state.rollouts[$0] ?? [] }.filter { $0.progress.ending == nil }
    }

    func nextRolloutID(account: String, environment: String) throws(StoreError) -> Int {
        ((state.rollouts[account] ?? []).filter { $0.environment.text == environment }.map(\.id).max() ?? 0) + 1
    }

    func insert(_ rollout: Rollout) throws(StoreError) {
        guard !(state.rollouts[rollout.account] ?? []).contains(where: { $0.environment == rollout.environment && $0.id == rollout.id })
        else { throw .conflict }
        state.rollouts[rollout.account, default: []].append(rollout)
    }

    func update(_ rollout: Rollout, expected: Int) throws(StoreError) -> Bool {
        guard
            let index = state.rollouts[rollout.account]?.firstIndex(where: {
                $0.environment == rollout.environment && $0.id == rollout.id && $0.revision == expected
            })
        else { return false }
        state.rollouts[rollout.account]?[index] = rollout
        return true
    }

    func saveServed(_ rollout: Rollout, replica: String, counts: ServedCounts) throws(StoreError) {
        state.served[Self.key(rollout), default: [:]][replica] = counts
    }

    func served(_ rollout: Rollout) throws(StoreError) -> ServedCounts {
        (state.served[Self.key(rollout)] ?? [:]).values.reduce(ServedCounts(candidate: 0, stable: 0)) {
            ServedCounts(candidate: $0.candidate + $1.candidate, stable: $0.stable + $1.stable)
        }
    }

    func countReports(_ batch: ReportBatch, cap: Int, atMillis: Int64) throws(StoreError) -> Int {
        var rows = state.reports[batch.subject] ?? [:]
        var held = rows.keys.lazy.filter { $0.arm == batch.arm }.count
        var added = 0
        for key in batch.reports {
            let row = MemoryReportRow(subject: batch.subject, arm: batch.arm, key: key, install: batch.install)
            guard rows[row] == nil, held < cap else { continue }
            rows[row] = atMillis
            held += 1
            added += 1
        }
        state.reports[batch.subject] = rows
        return added
    }

    func reportHealth(_ subject: ReportSubject) throws(StoreError) -> [String: ArmHealth] {
        MemoryReportRow.health((state.reports[subject] ?? [:]).keys)
    }

    func pruneReports(olderThanMillis millis: Int64, keep: Set<ReportSubject>) throws(StoreError) -> Int {
        var deleted = 0
        for (subject, rows) in state.reports where !keep.contains(subject) && (rows.values.max() ?? 0) < millis {
            deleted += rows.count
            state.reports[subject] = nil
        }
        return deleted
    }
}
