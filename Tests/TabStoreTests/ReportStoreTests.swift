import Foundation
import TabGuard
import Testing

@testable import TabStore

/// The apps' reports on every backend: an install counts once per subject, arm, kind and tab; the health per arm; the
/// cap per arm; pruning keeps what is asked and what is recent.
@Suite struct ReportStoreTests {
    static let rollout = ReportSubject.rollout(account: "a", environment: "production", id: 1)

    static func batch(_ arm: String, _ install: String, _ keys: [(ReportKind, String)], subject: ReportSubject = rollout) -> ReportBatch {
        ReportBatch(subject: subject, arm: arm, install: install, reports: keys.map { ReportBatch.ReportKey(kind: $0.0, tab: $0.1) })
    }

    @Test(arguments: Backend.available)
    func eachInstallCountsOncePerKindAndTab(backend: Backend) async throws {
        let store = try backend.open()
        var batches: [ReportBatch] = []
        for n in 0..<6 { batches.append(Self.batch("candidate", "c\(n)", [(.rendered, "")])) }
        for n in 0..<4 { batches.append(Self.batch("stable", "s\(n)", [(.rendered, "")])) }
        #expect(try await store.countReports(batches, cap: 1000) == 10)
        let failing = [Self.batch("candidate", "c0", [(.tabFailed, "news"), (.tabFailed, "news"), (.reverted, "")])]
        #expect(try await store.countReports(failing, cap: 1000) == 2, "the repeated row within a batch counts once")
        #expect(try await store.countReports(failing, cap: 1000) == 0, "and again not at all")
        _ = try await store.countReports([Self.batch("candidate", "c1", [(.tabFailed, "search")])], cap: 1000)
        let health = try await store.reportHealth(Self.rollout)
        #expect(
            health["candidate"]
                == ArmHealth(installs: 6, failed: 2, byKind: [.rendered: 6, .tabFailed: 2, .reverted: 1], byTab: ["news": 1, "search": 1]))
        #expect(health["stable"] == ArmHealth(installs: 4, failed: 0, byKind: [.rendered: 4], byTab: [:]))
        #expect(try await store.reportHealth(.rollout(account: "a", environment: "production", id: 2)).isEmpty)
    }

    @Test(arguments: Backend.available)
    func anArmHoldsAtMostItsCap(backend: Backend) async throws {
        let store = try backend.open()
        let batches = (0..<5).map { Self.batch("candidate", "c\($0)", [(.rendered, "")]) }
        #expect(try await store.countReports(batches, cap: 3) == 3)
        #expect(try await store.countReports([Self.batch("stable", "s", [(.rendered, "")])], cap: 3) == 1, "the other arm has its own")
        #expect(try await store.reportHealth(Self.rollout)["candidate"]?.installs == 3)
    }

    @Test(arguments: Backend.available)
    func pruningKeepsWhatIsAskedAndWhatIsRecent(backend: Backend) async throws {
        let store = try backend.open()
        let version = ReportSubject.version(account: "a", environment: "production", version: 3)
        _ = try await store.countReports(
            [Self.batch("candidate", "c", [(.rendered, "")]), Self.batch("version", "v", [(.rendered, "")], subject: version)], cap: 10)
        let later = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
        #expect(try await store.pruneReports(olderThanMillis: later, keep: [Self.rollout]) == 1)
        #expect(try await store.reportHealth(version).isEmpty)
        #expect(try await store.reportHealth(Self.rollout)["candidate"]?.installs == 1)
        #expect(try await store.pruneReports(olderThanMillis: 0, keep: []) == 0, "nothing older than the epoch")
    }
}
