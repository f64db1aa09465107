import Foundation
import Testing

@testable import TabClient

/// The launch guard's decisions as tables: what a launch does with the cache file's record, and the record's bounds.
@Suite struct LaunchGuardTests {
    struct Case: Sendable, CustomStringConvertible {
        var record: GuardRecord
        var holding: Int?
        var bundle: Int?
        var attempts: Int
        var verdict: LaunchVerdict
        var description: String { "\(record) holding \(holding.map(String.init) ?? "nil") attempts \(attempts)" }
    }

    static let cases: [Case] = [
        // Nothing pending, or the guard off: shown as it is.
        Case(record: GuardRecord(), holding: 2, bundle: 1, attempts: 2, verdict: .show),
        Case(record: GuardRecord(pending: 2, launches: 5), holding: 2, bundle: 1, attempts: 0, verdict: .show),
        // The file holds another version than the pending one (a newer one stored after it): not this one's launches.
        Case(record: GuardRecord(pending: 2, launches: 1), holding: 3, bundle: 1, attempts: 2, verdict: .show),
        // One launch ended before markRendered(): this one counts, the layout is shown again.
        Case(
            record: GuardRecord(pending: 2, launches: 1), holding: 2, bundle: 1, attempts: 2,
            verdict: .count(GuardRecord(pending: 2, launches: 2))),
        // A record without a count (written by hand) counts as the launch that showed it.
        Case(record: GuardRecord(pending: 2), holding: 2, bundle: 1, attempts: 3, verdict: .count(GuardRecord(pending: 2, launches: 2))),
        // launchAttempts launches ended before it: reverted and blocked, the older blocks kept.
        Case(
            record: GuardRecord(pending: 2, launches: 2, blocked: [7]), holding: 2, bundle: 1, attempts: 2,
            verdict: .revert(version: 2, record: GuardRecord(blocked: [7, 2]))),
        Case(
            record: GuardRecord(pending: 2, launches: 1), holding: 2, bundle: 1, attempts: 1,
            verdict: .revert(version: 2, record: GuardRecord(blocked: [2]))),
        // The bundle's version is the floor: never reverted.
        Case(
            record: GuardRecord(pending: 1, launches: 9), holding: 1, bundle: 1, attempts: 2,
            verdict: .count(GuardRecord(pending: 1, launches: 10))),
    ]

    @Test(arguments: cases) func aLaunchDecides(_ c: Case) {
        #expect(LaunchVerdict.at(launch: c.record, holding: c.holding, bundleVersion: c.bundle, attempts: c.attempts) == c.verdict)
    }

    @Test func theBlockedListKeepsTheNewest32() {
        var record = GuardRecord()
        for version in 1...40 { record.block(version) }
        record.block(40)
        #expect(record.blocked == Array(9...40))
        #expect(record.refuses(9) && !record.refuses(8) && !record.refuses(nil))
    }

    @Test func theRecordIsWrittenWithSortedKeysAndNothingWhenEmpty() {
        #expect(GuardRecord().fragment.isEmpty)
        let record = GuardRecord(pending: 3, launches: 1, blocked: [2], revoked: [5, 7])
        #expect(String(decoding: record.fragment, as: UTF8.self) == #","guard":{"blocked":[2],"launches":1,"pending":3,"revoked":[5,7]}"#)
    }

    @Test func aVersionGoneOutlivesOlderListsUntilTheServerNamesIt() throws {
        var record = GuardRecord(revoked: [5])
        let marked = record.markGone(7)
        let markedAgain = record.markGone(7)
        #expect(marked && !markedAgain)
        #expect(record.revoked == [5, 7] && record.gone == [7] && record.refuses(7))
        #expect(String(decoding: record.fragment, as: UTF8.self) == #","guard":{"gone":[7],"revoked":[5,7]}"#)
        let read = try JSONDecoder().decode(GuardRecord.self, from: Data(#"{"gone":[7],"revoked":[5,7]}"#.utf8))
        #expect(read == record)
        // A list made before the revoke (it does not name 7) keeps it.
        let sameList = record.setRevoked([5])
        let emptyList = record.setRevoked([])
        #expect(!sameList && emptyList)
        #expect(record.revoked == [7] && record.gone == [7])
        // Once the server's list names it, the list speaks for it: a later list without it un-revokes it.
        let named = record.setRevoked([7])
        #expect(named && record.revoked == [7] && record.gone == nil)
        let unrevoked = record.setRevoked([])
        #expect(unrevoked && record.revoked == nil && !record.refuses(7) && record.isEmpty)
    }

    @Test func aRevokedHeaderIsReadAsTheServerWritesIt() {
        #expect(GuardRecord.revoked(header: "5, 7") == [5, 7])
        #expect(GuardRecord.revoked(header: "5,x, 9") == [5, 9])
        #expect(GuardRecord.revoked(header: nil) == nil)
    }
}
