import TabGuard

/// The reports' rows of ``MemoryStore``: one entry per (subject, arm, kind, tab, install), dated.
struct MemoryReportRow: Sendable, Hashable {
    var subject: ReportSubject
    var arm: String
    var key: ReportBatch.ReportKey
    var install: String
}

extension MemoryReportRow {
    /// Each arm's health over `rows` (those of one subject).
    static func health(_ rows: some Sequence<MemoryReportRow>) -> [String: ArmHealth] {
        var installs: [String: Set<String>] = [:]
        var failed: [String: Set<String>] = [:]
        var byKind: [String: [ReportKind: Set<String>]] = [:]
        var byTab: [String: [String: Set<String>]] = [:]
        for row in rows {
            installs[row.arm, default: []].insert(row.install)
            byKind[row.arm, default: [:]][row.key.kind, default: []].insert(row.install)
            if row.key.kind != .rendered { failed[row.arm, default: []].insert(row.install) }
            if row.key.kind == .tabFailed { byTab[row.arm, default: [:]][row.key.tab, default: []].insert(row.install) }
        }
        return installs.reduce(into: [:]) { arms, entry in
            let arm = entry.key
            arms[arm] = ArmHealth(
                installs: entry.value.count, failed: failed[arm]?.count ?? 0,
                byKind: (byKind[arm] ?? [:]).mapValues(\.count), byTab: (byTab[arm] ?? [:]).mapValues(\.count))
        }
    }
}
