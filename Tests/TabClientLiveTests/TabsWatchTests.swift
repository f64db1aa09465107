import Foundation
import TabClient
import Testing

/// `tabs-watch` (the README's demo) against the real server: prints the bar, and again on a change.
@Suite(.serialized) struct TabsWatchTests {
    @Test func printsTheTabBarAndReprintsItWithinOneSecondOfAChange() async throws {
        let server = try await TabServerProcess.start()
        let bundle = try await Fixtures.bundleFromTabs(server: server.url)
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundleFile = directory.appendingPathComponent("Tabs.bundle.json")
        try JSONEncoder().encode(bundle).write(to: bundleFile)

        let watch = Process()
        watch.executableURL = try TabServerProcess.executable(named: "tabs-watch", environment: "TABS_WATCH_BIN")
        watch.arguments = [server.url.absoluteString, "--account", "jack", "--locale", "en", "--bundle", bundleFile.path, "--wait", "30"]
        let output = Pipe()
        watch.standardOutput = output
        watch.standardError = FileHandle.nullDevice
        let printed = Locked("")
        // When the changed bar arrived, taken on the reading thread (not on the test's own, maybe busy, executor).
        let changedAt = Locked<ContinuousClock.Instant?>(nil)
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
            } else {
                let text = printed.withLock {
                    $0 += String(decoding: data, as: UTF8.self); return $0
                }
                if text.contains("| Headlines |") { changedAt.withLock { $0 = $0 ?? .now } }
            }
        }
        try watch.run()
        defer { watch.terminate() }
        #expect(await Fixtures.eventually(within: .seconds(60)) { printed.withLock { $0.contains("| Home |") } })
        let first = printed.withLock { $0 }
        #expect(first.contains("| Home | *Favourites [3]* | Web | News | More ⋯2 |"))
        #expect(first.contains("  More ▸ Profile, Options"))
        #expect(first.contains("  Options ▸ First option, Option B"))
        // Let the watcher's long-poll reach the server before the change.
        try await Task.sleep(for: .milliseconds(500))

        try await Fixtures.changeJack(server: server.url, newsTitle: "Headlines")
        let acknowledged = ContinuousClock.now
        #expect(await Fixtures.eventually(within: .seconds(30)) { changedAt.withLock { $0 != nil } })
        let arrived = try #require(changedAt.withLock { $0 })
        #expect(arrived - acknowledged < .seconds(1))
        await server.stop()
    }
}
