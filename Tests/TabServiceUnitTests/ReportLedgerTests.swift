import TabStore
import Testing

@testable import TabService

/// The per-address bound on report requests a minute: the requests past it wait for the next minute, another address
/// and the next minute are not held back, and 0 bounds nothing.
@Suite struct ReportLedgerTests {
    static let subject = ReportSubject(account: "jack", environment: "production", key: "v1")

    static func ledger(requestsPerMinute: Int) -> ReportLedger {
        ReportLedger(
            limits: ReportLimits(installsPerAddress: 0, requestsPerMinute: requestsPerMinute, rowsPerArm: 100_000, retentionDays: 30))
    }

    @Test func requestsPastTheBoundWaitForTheNextMinute() {
        let ledger = Self.ledger(requestsPerMinute: 3)
        let minute: Int64 = 29_000_000 * 60_000
        for n in 0..<3 {
            #expect(ledger.admit(address: "10.0.0.1", install: "i\(n)", subject: Self.subject, nowMillis: minute + 1_000) == nil)
        }
        #expect(ledger.admit(address: "10.0.0.1", install: "i3", subject: Self.subject, nowMillis: minute + 15_000) == 45)
        #expect(ledger.admit(address: "10.0.0.2", install: "i3", subject: Self.subject, nowMillis: minute + 15_000) == nil)
        #expect(ledger.admit(address: "10.0.0.1", install: "i3", subject: Self.subject, nowMillis: minute + 60_000) == nil)
    }

    @Test func zeroBoundsNothing() {
        let ledger = Self.ledger(requestsPerMinute: 0)
        for n in 0..<1_000 {
            #expect(ledger.admit(address: "10.0.0.1", install: "i\(n)", subject: Self.subject, nowMillis: 1_000) == nil)
        }
    }
}
