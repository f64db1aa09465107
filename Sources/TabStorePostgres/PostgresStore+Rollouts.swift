import Foundation
import TabDelivery
import TabStore

/// ``RolloutRows`` on PostgreSQL. Writers hold the store's advisory lock, and a rollout is updated only where its
/// revision is the one read: of replicas racing to record a step, exactly one does. Pointer moves and rollout changes
/// are announced (``Announcement``), delivered at commit.
extension PGRows {
    private func rollouts(_ sql: String, _ parameters: [PGValue]) throws(StoreError) -> [Rollout] {
        try run(sql, parameters).map { (row) throws(StoreError) -> Rollout in try RolloutSQL.rollout(row[0].bytea) }
    }

    func pointer(account: String, environment: String) throws(StoreError) -> Int? {
        try run(RolloutSQL.selectPointer, [.text(account), .text(environment)]).first?.first?.text.flatMap { Int($0) }
    }

    func setPointer(account: String, environment: String, version: Int) throws(StoreError) {
        _ = try run(RolloutSQL.upsertPointer, [.text(account), .text(environment), .text(String(version))])
        try recordServed(account: account, environment: environment, version: version)
        try announce(.pointer(account: account))
    }

    func recordServed(account: String, environment: String, version: Int) throws(StoreError) {
        _ = try run(RolloutSQL.insertServedVersion, [.text(account), .text(environment), .text(String(version))])
    }

    func servedVersions(account: String) throws(StoreError) -> [ServedVersion] {
        try run(RolloutSQL.selectServedVersions, [.text(account)]).compactMap { row in
            guard let environment = row[0].text, let version = row[1].text.flatMap({ Int($0) }) else { return nil }
            return ServedVersion(environment: environment, version: version)
        }
    }

    func stringsPointer(locale: String, environment: String) throws(StoreError) -> Int? {
        try run(RolloutSQL.selectStringsPointer, [.text(locale), .text(environment)]).first?.first?.text.flatMap { Int($0) }
    }

    /// Announced as `stringspointer <locale> …`: the other replicas read the table's pointers again.
    func setStringsPointer(locale: String, environment: String, version: Int) throws(StoreError) {
        _ = try run(RolloutSQL.upsertStringsPointer, [.text(locale), .text(environment), .text(String(version))])
        try announce(.stringsPointer(locale: locale))
    }

    func strings(locale: String, number: Int) throws(StoreError) -> StoredStrings? {
        try db.execute(
            "SELECT \(PostgresStore.stringsColumns) FROM strings_versions WHERE locale = $1 AND version = $2",
            [.text(locale), .text(String(number))]
        ).first.map { (row) throws(StoreError) in try PostgresStore.strings(row) }
    }

    func pointers(account: String) throws(StoreError) -> [String: Int] {
        var result: [String: Int] = [:]
        for row in try run(RolloutSQL.selectPointers, [.text(account)]) {
            if let environment = row[0].text, let version = row[1].text.flatMap({ Int($0) }) { result[environment] = version }
        }
        return result
    }

    func accounts(extending account: String, environment: String) throws(StoreError) -> [String] {
        try run(RolloutSQL.selectExtending, [.text(account), .text(environment)]).compactMap { $0.first?.text }
    }

    func latestRollout(account: String, environment: String) throws(StoreError) -> Rollout? {
        try rollouts(RolloutSQL.selectLatestRollout, [.text(account), .text(environment)]).first
    }

    func rolloutsUnderWay() throws(StoreError) -> [Rollout] { try rollouts(RolloutSQL.selectRolloutsUnderWay, []) }

    func nextRolloutID(account: String, environment: String) throws(StoreError) -> Int {
        try run(RolloutSQL.nextRolloutID, [.text(account), .text(environment)]).first?.first?.text.flatMap { Int($0) } ?? 1
    }

    func insert(_ rollout: Rollout) throws(StoreError) {
        _ = try run(RolloutSQL.insertRollout, Self.bind(RolloutSQL.insertCells(rollout, atMillis: clock.unixMillis)))
        try announceRecorded(rollout)
    }

    func update(_ rollout: Rollout, expected: Int) throws(StoreError) -> Bool {
        let updated = try run(
            RolloutSQL.updateRollout + " RETURNING 1",
            Self.bind(RolloutSQL.updateCells(rollout, expected: expected, atMillis: clock.unixMillis)))
        guard !updated.isEmpty else { return false }
        try announceRecorded(rollout)
        return true
    }

    /// Announces a promotion (``Announcement/Kind/promoted(_:from:to:version:author:)``), beside the pointer's own
    /// announcement that replicas of an older release read.
    func announcePromotion(
        _ subject: PromotionSubject, from: String, to: String, version: Int, author: String, atMillis: Int64
    ) throws(StoreError) {
        try announce(.promoted(subject, from: from, to: to, version: version, author: author), atMillis: atMillis)
    }

    /// Announces a recorded rollout change twice: as ``Announcement/Kind/rolloutRecorded(account:environment:rollout:revision:)``
    /// for replicas that give its events to `/v1/events`, and as ``Announcement/Kind/rollout(account:)`` for those of an
    /// older release (which skip the first: it has more words than they read).
    private func announceRecorded(_ rollout: Rollout) throws(StoreError) {
        let millis = clock.unixMillis
        try announce(
            .rolloutRecorded(
                account: rollout.account, environment: rollout.environment.text, rollout: rollout.id, revision: rollout.revision),
            atMillis: millis)
        try announce(.rollout(account: rollout.account), atMillis: millis)
    }

    func saveServed(_ rollout: Rollout, replica: String, counts: ServedCounts) throws(StoreError) {
        _ = try run(
            RolloutSQL.upsertServed,
            [
                .text(rollout.account), .text(rollout.environment.text), .text(String(rollout.id)), .text(replica),
                .text(String(counts.candidate)), .text(String(counts.stable)), .text(String(clock.unixMillis)),
            ])
    }

    func served(_ rollout: Rollout) throws(StoreError) -> ServedCounts {
        let row = try run(RolloutSQL.selectServed, [.text(rollout.account), .text(rollout.environment.text), .text(String(rollout.id))])
            .first
        return ServedCounts(
            candidate: row.flatMap { $0[0].text.flatMap { Int($0) } } ?? 0, stable: row.flatMap { $0[1].text.flatMap { Int($0) } } ?? 0)
    }
}

/// A word of a notification's payload (words are separated by spaces): percent-encoded, only RFC 3986's unreserved
/// ASCII characters left as they are.
enum NotificationWord {
    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""  // nil only for invalid UTF-16, which a String is not
    }

    /// The text of an encoded word; nil when an escape is cut short or not hexadecimal, or the bytes are not UTF-8.
    static func decode(_ word: Substring) -> String? { String(word).removingPercentEncoding }
}
