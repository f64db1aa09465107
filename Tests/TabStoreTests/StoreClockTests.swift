import TabTime
import Testing

@testable import TabStore

/// A store dates what it writes by the clock it was opened with, not by the machine's.
@Suite struct StoreClockTests {
    static let instant = Timestamp(unixMillis: 1_234_567_890_123)

    @Test(arguments: Backend.available)
    func versionsDeletionsAndTablesAreDatedByTheStoresClock(backend: Backend) async throws {
        let store = try backend.open(clock: .fixed(Self.instant))
        let first = try await store.append(write("a", "{}", .ifNoneMatchAny))
        #expect(first.createdAtMillis == Self.instant.unixMillis)
        let deletion = try await store.delete(account: "a", precondition: .ifMatch([first.etag]), author: "tester")
        #expect(deletion.createdAtMillis == Self.instant.unixMillis)
        let table = try await store.appendStrings(
            locale: "de", source: Array("{}".utf8), contentType: "application/json", precondition: .ifNoneMatchAny, author: nil)
        #expect(table.createdAtMillis == Self.instant.unixMillis)
        #expect(try await store.versions(account: "a").map(\.createdAtMillis) == [Self.instant.unixMillis, Self.instant.unixMillis])
    }
}
