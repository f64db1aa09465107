import Foundation
import Synchronization
import TabDelivery
import TabTime
import Testing

@testable import TabStore
@testable import TabStorePostgres

/// What one PostgreSQL store tells another of its commits: promotions with their environments and author, rollout
/// changes with their environment, id and revision (once each, not also as the plain announcement an older release
/// reads), and an older release's plain announcement still heard.
@Suite(.serialized) struct PostgresAnnouncementTests {
    /// The changes a store's listener reported.
    final class Heard: Sendable {
        private let changes = Mutex<[StoreChange]>([])
        func append(_ change: StoreChange) { changes.withLock { $0.append(change) } }
        var all: [StoreChange] { changes.withLock { $0 } }
        func clear() { changes.withLock { $0 = [] } }

        /// Waits for `count` changes (2 s at most), then a little longer for any more.
        func settle(count: Int) async throws {
            for _ in 0..<100 where all.count < count { try await Task.sleep(for: .milliseconds(20)) }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    func listen(_ store: PostgresStore) -> Heard {
        let heard = Heard()
        store.watch { change in heard.append(change) }
        return heard
    }

    @Test(.enabled(if: PostgresTestDatabase.serverURL != nil))
    func promotionsAndRolloutChangesAreAnnouncedWithWhatTheOtherReplicasTell() async throws {
        let url = try PostgresTestDatabase.create()
        let one = try PostgresStore(url: url)
        let two = try PostgresStore(url: url)
        let seen = listen(two)
        defer { two.stopWatching() }
        try await Task.sleep(for: .milliseconds(300))

        let first = try await one.append(write("x", "{\"n\":1}", .ifNoneMatchAny))
        let author = "Zoë de Vries (ops) 100%"
        _ = try await one.promote(account: "x", from: "production", to: "staging", author: author, audit: nil) {
            (source, _, _, _, _) throws(RolloutError) in .movePointer(version: source?.version ?? 0, creates: true)
        }
        let table = try await one.appendStrings(
            locale: "fr", source: Array(#""HOME" = "Accueil";"#.utf8), contentType: "text/plain", precondition: .none, author: "w")
        _ = try await one.promoteStrings(locale: "fr", from: "production", to: "staging", author: "release bot", audit: nil) {
            (source, _) throws(RolloutError) in .movePointer(version: source?.version ?? 0, creates: true)
        }
        try await seen.settle(count: 4)
        let changes = seen.all
        let promotions = changes.compactMap { change -> (PromotionSubject, [String])? in
            guard case .promoted(let subject, let from, let to, let version, let author, _) = change else { return nil }
            return (subject, [from, to, String(version), author])
        }
        #expect(promotions.map(\.0) == [.layout(account: "x"), .strings(locale: "fr")], "\(changes)")
        #expect(
            promotions.map(\.1) == [
                ["production", "staging", String(first.version), author], ["production", "staging", String(table.version), "release bot"],
            ])
        // The writes are told once each; the promotions' pointer moves (announced for an older release) are not told
        // again as a layout's or a table's change.
        #expect(changes.count == 4, "\(changes)")
        #expect(changes.filter { if case .layout(account: "x", _) = $0 { true } else { false } }.count == 1)
        #expect(changes.filter { if case .strings(locale: "fr", _) = $0 { true } else { false } }.count == 1)

        seen.clear()
        var draft = write("x", "{\"n\":2}", .ifMatch([first.etag]))
        draft.publish = false
        let candidate = try await one.append(draft)
        let started = try await one.startRollout(account: "x", environment: "production", author: "deployer", audit: nil) {
            (id, current, latest, availability) throws(RolloutError) in
            try Rollout.start(
                RolloutPlan(version: candidate.version, schedule: .fixed(Percent(10)!)),
                in: RolloutStartContext(
                    account: "x", environment: .production, id: id, current: current, latest: latest, precondition: .ifMatch([first.etag]),
                    now: Timestamp(unixMillis: TimeSource.system.unixMillis), availability: { availability[$0] ?? .missing }))
        }
        let raised = try await one.changeRollout(account: "x", environment: "production", author: "ops", audit: nil) {
            (stored) throws(RolloutError) in
            try stored.patched(RolloutPatch(percent: Percent(50)), at: Timestamp(unixMillis: TimeSource.system.unixMillis))
        }
        try await seen.settle(count: 3)  // the draft's row, then the two changes
        let rollouts = seen.all
        let recorded = rollouts.compactMap { change -> [Int]? in
            guard case .rolloutRecorded(account: "x", environment: "production", let id, let revision, _) = change else { return nil }
            return [id, revision]
        }
        #expect(recorded == [[1, started.rollout.revision], [1, raised.rollout.revision]], "\(rollouts)")
        #expect(
            !rollouts.contains { if case .rollout = $0 { true } else { false } }, "not also as an older release's announcement: \(rollouts)"
        )

        // An older release announces a rollout change by its account alone: still heard.
        seen.clear()
        let raw = try PGConnection(url: url)
        _ = try raw.execute("SELECT pg_notify($1, $2)", [.text(PostgresStore.channel), .text("rollout legacy 1700000000000 elsewhere")])
        try await seen.settle(count: 1)
        #expect(seen.all == [.rollout(account: "legacy", committedAtMillis: 1_700_000_000_000)])
    }

    @Test func notificationWordsCarryAnyAuthor() {
        for text in ["admin", "Zoë de Vries (ops) 100%", "a%20b", "", "tab\tand\nnewline", "日本語"] {
            let word = NotificationWord.encode(text)
            #expect(!word.contains(" ") && !word.contains("\n"), "\(word)")
            #expect(NotificationWord.decode(Substring(word)) == text)
        }
        #expect(NotificationWord.decode("%4") == nil && NotificationWord.decode("%zz") == nil && NotificationWord.decode("%FF") == nil)
    }
}
