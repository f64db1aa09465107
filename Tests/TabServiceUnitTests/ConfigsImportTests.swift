import Foundation
import TabConfigs
import TabStore
import Testing

/// `import` writes a layout file under its file name, which must be an account name.
@Suite struct ConfigsImportTests {
    @Test func aLayoutFileWhoseNameIsNoAccountIsRefusedAndTheRestImported() async throws {
        let root = NSTemporaryDirectory() + "configs-import-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/layouts", withIntermediateDirectories: true)
        let layout = #"{"schemaVersion":1,"tabs":[{"id":"a","title":"A","rootViewController":"AViewController"}]}"#
        try layout.write(toFile: root + "/layouts/acme.json", atomically: true, encoding: .utf8)
        try layout.write(toFile: root + "/layouts/not an account.json", atomically: true, encoding: .utf8)
        let store = MemoryStore()
        let report = try await ConfigsDirectory.load(root).importInto(store, force: false)
        #expect(report.imported == ["acme"])
        #expect(report.refused == ["\(root)/layouts/not an account.json: 'not an account' is not an account name"])
        #expect(try await store.pointed(account: "not an account", environment: TabStoreDefaults.environment) == nil)
    }
}
