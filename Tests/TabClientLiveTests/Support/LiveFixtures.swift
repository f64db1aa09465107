import Foundation
import TabClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Paths, files and small HTTP calls the tests share.
enum Fixtures {
    /// The repository root (this file is Tests/TabClientLiveTests/Support/LiveFixtures.swift).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The client package's fixtures (one copy, shared with its own tests).
    static let directory = repository.appendingPathComponent("Clients/TabClient/Tests/TabClientTests/Fixtures")

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
        server: URL, account: String = "jack", languages: [String] = ["en"], cache: URL? = nil,
        longPollWait: Duration = .seconds(30), initialBackoff: Duration = .milliseconds(50),
        onEvent: (@Sendable (TabClientEvent) -> Void)? = nil
    ) -> TabClientConfiguration {
        TabClientConfiguration(
            server: server, account: account, preferredLanguages: languages, platform: nil, appVersion: nil,
            cacheDirectory: cache, requestTimeout: .seconds(5), longPollWait: longPollWait, initialBackoff: initialBackoff,
            maximumBackoff: .seconds(2), onEvent: onEvent)
    }

    /// One request with URLSession (a real client), `timeout` seconds at most.
    static func request(
        _ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: Double = 10
    ) async throws -> (status: Int, headers: [String: String], body: Data) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = timeout
        request.cachePolicy = .reloadIgnoringLocalCacheData
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (body, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestFailure("not an HTTP response from \(url)") }
        var fields: [String: String] = [:]
        for case (let name as String, let value as String) in http.allHeaderFields { fields[name] = value }
        return (http.statusCode, fields, body)
    }

    /// A bundle of one representation made from `GET …/tabs` as the client would send it (the shape
    /// `…/tabs/bundle` has), for tests that need the server's current layout and ETag as the bundled one.
    static func bundleFromTabs(server: URL, account: String = "jack", locale: String = "en") async throws -> LayoutBundle {
        let answer = try await request(
            "GET", server.appendingPathComponent("v1/accounts/\(account)/tabs"),
            headers: ["Accept": "application/json", "Accept-Language": locale])
        guard answer.status == 200, let etag = header("ETag", answer.headers) else {
            throw TestFailure("GET …/tabs answered \(answer.status)")
        }
        let layout = try CompiledLayout.decode(answer.body)
        return LayoutBundle(account: account, representations: [.init(locale: layout.locale, etag: etag, layout: layout)])
    }

    /// Changes jack's source through the management API (`If-Match` with its current ETag): the title of the
    /// tab `news` becomes `newsTitle`. Returns when the write is acknowledged.
    static func changeJack(server: URL, newsTitle: String) async throws {
        let auth = ["Authorization": "Bearer \(TabServerProcess.adminToken)"]
        let layoutURL = server.appendingPathComponent("v1/accounts/jack/layout")
        let current = try await request("GET", layoutURL, headers: auth)
        guard current.status == 200, let etag = header("ETag", current.headers) else {
            throw TestFailure("GET …/layout answered \(current.status)")
        }
        guard var source = try JSONSerialization.jsonObject(with: current.body) as? [String: Any],
            var tabs = source["tabs"] as? [[String: Any]], let index = tabs.firstIndex(where: { $0["id"] as? String == "news" })
        else { throw TestFailure("jack's source has no tab 'news'") }
        tabs[index]["title"] = newsTitle
        source["tabs"] = tabs
        let put = try await request(
            "PUT", layoutURL, headers: auth.merging(["If-Match": etag, "Content-Type": "application/json"]) { $1 },
            body: try JSONSerialization.data(withJSONObject: source))
        guard put.status == 200 || put.status == 201 else {
            throw TestFailure("PUT …/layout answered \(put.status): \(String(decoding: put.body, as: UTF8.self))")
        }
    }

    static func header(_ name: String, _ headers: [String: String]) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
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

/// A value behind a lock, for the tests' threads (the client's own `Locked` is internal to its package).
final class Locked<Value>: @unchecked Sendable {
    // Safety: every access to `value` goes through `withLock`, which holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
