import Foundation

@testable import TabClient

/// Paths, files and small HTTP calls the tests share.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// `Fixtures/jack.bundle.json`: jack's layout as an app would ship it, with a title the server does not
    /// have ("Bundled home"), so that a test can tell the bundled layout from the server's.
    static func jackBundle() throws -> LayoutBundle {
        try LayoutBundle.load(contentsOf: directory.appendingPathComponent("jack.bundle.json"))
    }

    /// A new empty directory under the temporary directory.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tabclient-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A configuration for tests: explicit languages, no platform or app version unless given, short timeouts.
    static func configuration(
        server: URL, account: String = "jack", languages: [String] = ["en"], environment: String? = nil, installID: String? = nil,
        cache: URL? = nil, longPollWait: Duration = .seconds(30), initialBackoff: Duration = .milliseconds(50),
        onEvent: (@Sendable (TabClientEvent) -> Void)? = nil
    ) -> TabClientConfiguration {
        var configuration = TabClientConfiguration(
            server: server, account: account, preferredLanguages: languages, platform: nil, appVersion: nil,
            environment: environment, installID: installID, cacheDirectory: cache, requestTimeout: .seconds(5), longPollWait: longPollWait,
            initialBackoff: initialBackoff,
            maximumBackoff: .seconds(2), onEvent: onEvent)
        configuration.reports = false  // nothing is sent in tests unless a test asks
        return configuration
    }

    /// Polls `condition` every 10 ms until it holds or `deadline` passes; returns whether it held.
    static func eventually(within deadline: Duration, _ condition: () -> Bool) async -> Bool {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}

/// Records a client's events, for assertions.
final class EventLog: Sendable {
    private let events = Locked<[TabClientEvent]>([])

    var handler: @Sendable (TabClientEvent) -> Void { { [events] event in events.withLock { $0.append(event) } } }
    var all: [TabClientEvent] { events.withLock { $0 } }
    var longPollsSent: Int { all.filter { if case .requestSent(_, true, _) = $0 { true } else { false } }.count }
}

/// A failure of the test's own machinery, with what went wrong.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
