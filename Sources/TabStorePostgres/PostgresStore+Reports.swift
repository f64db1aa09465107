import TabGuard
import TabStore

extension PGRows {
    func countReports(_ batch: ReportBatch, cap: Int, atMillis: Int64) throws(StoreError) -> Int {
        let subject = batch.subject
        let names: [PGValue] = [.text(subject.account), .text(subject.environment), .text(subject.key), .text(batch.arm)]
        var held = try run(ReportSQL.armRows, names).first.flatMap { $0[0].text.flatMap { Int($0) } } ?? 0
        var added = 0
        for key in batch.reports where held < cap {
            let inserted = try run(
                ReportSQL.insert + " RETURNING 1",
                names + [.text(key.kind.rawValue), .text(key.tab), .text(batch.install), .text(String(atMillis))])
            if !inserted.isEmpty {
                held += 1
                added += 1
            }
        }
        return added
    }

    func reportHealth(_ subject: ReportSubject) throws(StoreError) -> [String: ArmHealth] {
        let names: [PGValue] = [.text(subject.account), .text(subject.environment), .text(subject.key)]
        let rows = try run(ReportSQL.health, names + names + names + names).map { row in
            ReportSQL.CountRow(
                arm: row[0].text ?? "", kind: row[1].text ?? "", tab: row[2].text ?? "", installs: row[3].text.flatMap { Int($0) } ?? 0)
        }
        return ReportSQL.health(rows)
    }

    func pruneReports(olderThanMillis millis: Int64, keep: Set<ReportSubject>) throws(StoreError) -> Int {
        let stale = try run(ReportSQL.staleSubjects, [.text(String(millis))]).map { row in
            ReportSubject(account: row[0].text ?? "", environment: row[1].text ?? "", key: row[2].text ?? "")
        }
        var deleted = 0
        for subject in stale where !keep.contains(subject) {
            deleted += try run(
                ReportSQL.deleteSubject + " RETURNING 1", [.text(subject.account), .text(subject.environment), .text(subject.key)]
            ).count
        }
        return deleted
    }
}
