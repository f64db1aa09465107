import TabDelivery

/// ``RolloutRows`` on SQLite (inside `BEGIN IMMEDIATE`: one writer at a time).
extension SQLiteRows {
    private func rollouts(_ sql: String, _ parameters: [SQLiteValue]) throws(StoreError) -> [Rollout] {
        try db.query(sql, parameters) { (row) throws(StoreError) -> Rollout in try RolloutSQL.rollout(row.blob(0)) }
    }

    func pointer(account: String, environment: String) throws(StoreError) -> Int? {
        try db.query(RolloutSQL.selectPointer, [.text(account), .text(environment)]) { $0.int(0) }.first
    }

    func setPointer(account: String, environment: String, version: Int) throws(StoreError) {
        try db.run(RolloutSQL.upsertPointer, [.text(account), .text(environment), .int(version)])
        try recordServed(account: account, environment: environment, version: version)
    }

    func recordServed(account: String, environment: String, version: Int) throws(StoreError) {
        try db.run(RolloutSQL.insertServedVersion, [.text(account), .text(environment), .int(version)])
    }

    func servedVersions(account: String) throws(StoreError) -> [ServedVersion] {
        try db.query(RolloutSQL.selectServedVersions, [.text(account)]) { (row) throws(StoreError) in
            ServedVersion(environment: try row.required(0), version: row.int(1))
        }
    }

    func stringsPointer(locale: String, environment: String) throws(StoreError) -> Int? {
        try db.query(RolloutSQL.selectStringsPointer, [.text(locale), .text(environment)]) { $0.int(0) }.first
    }

    func setStringsPointer(locale: String, environment: String, version: Int) throws(StoreError) {
        try db.run(RolloutSQL.upsertStringsPointer, [.text(locale), .text(environment), .int(version)])
    }

    func strings(locale: String, number: Int) throws(StoreError) -> StoredStrings? {
        try db.query(
            "SELECT \(SQLiteStore.stringsColumns) FROM strings_versions WHERE locale = ? AND version = ?", [.text(locale), .int(number)],
            SQLiteStore.strings
        ).first
    }

    func pointers(account: String) throws(StoreError) -> [String: Int] {
        Dictionary(
            try db.query(RolloutSQL.selectPointers, [.text(account)]) { (row) throws(StoreError) in (try row.required(0), row.int(1)) },
            uniquingKeysWith: { $1 })
    }

    func accounts(extending account: String, environment: String) throws(StoreError) -> [String] {
        try db.query(RolloutSQL.selectExtending, [.text(account), .text(environment)]) { (row) throws(StoreError) in try row.required(0) }
    }

    func latestRollout(account: String, environment: String) throws(StoreError) -> Rollout? {
        try rollouts(RolloutSQL.selectLatestRollout, [.text(account), .text(environment)]).first
    }

    func rolloutsUnderWay() throws(StoreError) -> [Rollout] { try rollouts(RolloutSQL.selectRolloutsUnderWay, []) }

    func nextRolloutID(account: String, environment: String) throws(StoreError) -> Int {
        try db.query(RolloutSQL.nextRolloutID, [.text(account), .text(environment)]) { $0.int(0) }.first ?? 1
    }

    func insert(_ rollout: Rollout) throws(StoreError) {
        try db.run(RolloutSQL.insertRollout, Self.bind(RolloutSQL.insertCells(rollout, atMillis: clock.unixMillis)))
    }

    func update(_ rollout: Rollout, expected: Int) throws(StoreError) -> Bool {
        try db.run(RolloutSQL.updateRollout, Self.bind(RolloutSQL.updateCells(rollout, expected: expected, atMillis: clock.unixMillis)))
        return (try db.query("SELECT changes()", []) { $0.int(0) }.first ?? 0) == 1
    }

    func saveServed(_ rollout: Rollout, replica: String, counts: ServedCounts) throws(StoreError) {
        try db.run(
            RolloutSQL.upsertServed,
            [
                .text(rollout.account), .text(rollout.environment.text), .int(rollout.id), .text(replica), .int(counts.candidate),
                .int(counts.stable), .int64(clock.unixMillis),
            ])
    }

    func served(_ rollout: Rollout) throws(StoreError) -> ServedCounts {
        try db.query(RolloutSQL.selectServed, [.text(rollout.account), .text(rollout.environment.text), .int(rollout.id)]) {
            ServedCounts(candidate: $0.int(0), stable: $0.int(1))
        }.first ?? ServedCounts(candidate: 0, stable: 0)
    }
}
