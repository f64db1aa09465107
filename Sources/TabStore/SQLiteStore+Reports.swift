import TabGuard

extension SQLiteRows {
    func countReports(_ batch: ReportBatch, cap: Int, atMillis: Int64) throws(StoreError) -> Int {
        let subject = batch.subject
        let where_: [SQLiteValue] = [.text(subject.account), .text(subject.environment), .text(subject.key), .text(batch.arm)]
        var held = try db.query(ReportSQL.armRows, where_) { $0.int(0) }.first ?? 0
        var added = 0
        for key in batch.reports where held < cap {
            try db.run(ReportSQL.insert, where_ + [.text(key.kind.rawValue), .text(key.tab), .text(batch.install), .int64(atMillis)])
            if (try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0) == 1 {
                held += 1
                added += 1
            }
        }
        return added
    }

    func reportHealth(_ subject: ReportSubject) throws(StoreError) -> [String: ArmHealth] {
        let names: [SQLiteValue] = [.text(subject.account), .text(subject.environment), .text(subject.key)]
        let rows = try db.query(ReportSQL.health, names + names + names + names) { row in
            ReportSQL.CountRow(arm: row.text(0) ?? "", kind: row.text(1) ?? "", tab: row.text(2) ?? "", installs: row.int(3))
        }
        return ReportSQL.health(rows)
    }

    func pruneReports(olderThanMillis millis: Int64, keep: Set<ReportSubject>) throws(StoreError) -> Int {
        let stale = try db.query(ReportSQL.staleSubjects, [.int64(millis)]) { row in
            ReportSubject(account: row.text(0) ?? "", environment: row.text(1) ?? "", key: row.text(2) ?? "")
        }
        var deleted = 0
        for subject in stale where !keep.contains(subject) {
            try db.run(ReportSQL.deleteSubject, [.text(subject.account), .text(subject.environment), .text(subject.key)])
            deleted += try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0
        }
        return deleted
    }
}
