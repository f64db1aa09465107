import Foundation
import Testing

@testable import TabClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Against a real tabserver when `TABSERVER_BIN` names one (the Java client's `LiveServerTest` does the same): a server
/// signing with the conformance fixtures' `current` test key, the signed bundle revalidated, another key refused,
/// manifest mode choosing each install's arm of a live rollout as the server does, and a stepped rollout's candidate
/// prefetched and switched to at the step's time with the server gone.
@Suite(.enabled(if: !(ProcessInfo.processInfo.environment["TABSERVER_BIN"] ?? "").isEmpty)) struct LiveServerTests {
    static let token = "swift-live-test-token-0123456789"

    /// `tabserver serve` on a free port with the sample configs, signing with the fixtures' `current` key.
    static func startServer() throws -> (Process, URL) {
        let port = try freePort()
        let url = try #require(URL(string: "http://127.0.0.1:\(port)"))
        let server = Process()
        server.executableURL = URL(fileURLWithPath: try #require(ProcessInfo.processInfo.environment["TABSERVER_BIN"]))
        let configs = ConformanceTests.directory.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("configs")
        server.arguments = [
            "serve", "--port", "\(port)", "--host", "127.0.0.1", "--store", "memory:", "--configs", configs.path, "--signing-key",
            ConformanceTests.directory.appendingPathComponent("signed/keys/current.pem").path,
        ]
        server.environment = ["TABSERVER_ADMIN_TOKEN": token]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        return (server, url)
    }

    @Test func manifestModeAndSignaturesAgainstALiveServer() async throws {
        let (server, url) = try Self.startServer()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        try await Self.waitUntilReady(url)

        let keys = try SigningKeys(base64: [SigningTests.key("current"), SigningTests.key("next")])
        func configuration(_ install: String? = nil, manifest: Bool = false, keys: SigningKeys = keys) -> TabClientConfiguration {
            TabClientConfiguration(
                server: url, account: "jack", preferredLanguages: ["en"], platform: nil, appVersion: nil, installID: install,
                cacheDirectory: nil, requestTimeout: .seconds(10), manifestMode: manifest, signingKeys: keys)
        }
        let bundle = try await TabClient.downloadBundle(configuration())
        let signed = try TabClient(configuration: configuration(), bundle: bundle)
        #expect(signed.source == .bundle)
        #expect(try await signed.refresh() == .notModified)
        let stable = try #require(signed.current.version)
        #expect(throws: TabClientError.self) {
            try TabClient(configuration: configuration(keys: try SigningKeys(base64: [SigningTests.key("stranger")])), bundle: bundle)
        }

        let draft = try await Self.send(
            "PATCH", url, "/v1/accounts/jack/layout?publish=false", #"{"initialTab":"home"}"#, "application/merge-patch+json")
        #expect(draft.status == 200)
        let candidate = try #require(draft.header("Layout-Version").flatMap { Int($0) })
        let rollout = try await Self.send(
            "POST", url, "/v1/accounts/jack/layout/rollout", #"{"version":\#(candidate),"percent":50,"seed":"fixed-seed"}"#,
            "application/json")
        #expect(rollout.status == 201)

        let inCandidate = try TabClient(
            configuration: configuration("3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77", manifest: true), bundle: bundle)
        guard case .updated(let layout) = try await inCandidate.refresh() else {
            Issue.record("the candidate's install was not updated")
            return
        }
        #expect(layout.version == candidate)
        #expect(layout.initialTab?.id == "home")
        let inStable = try TabClient(configuration: configuration("install-0", manifest: true), bundle: bundle)
        #expect(try await inStable.refresh() == .notModified)
        #expect(inStable.current.version == stable)
        #expect(inStable.source == .server)
    }

    /// The schedule against a live server: a rollout of one step (50 %, held an hour, then everyone). An install in the
    /// stable arm (bucket 9785) prefetches the candidate, signed, from the server's own manifest; with the server gone,
    /// when its clock reaches the manifest's step it switches, and a relaunch shows the candidate, offline.
    @Test func aStableInstallPrefetchesTheCandidateOfAStepAndSwitchesAtItsTimeWithTheServerGone() async throws {
        let (server, url) = try Self.startServer()
        var running = true
        defer {
            if running {
                server.terminate()
                server.waitUntilExit()
            }
        }
        try await Self.waitUntilReady(url)
        let cache = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: cache) }
        let clock = ManualClock(Date())
        let configuration = TabClientConfiguration(
            server: url, account: "jack", preferredLanguages: ["en"], platform: nil, appVersion: nil, installID: "install-0",
            cacheDirectory: cache, requestTimeout: .seconds(10), manifestMode: true,
            signingKeys: try SigningKeys(base64: [SigningTests.key("current"), SigningTests.key("next")]), clock: clock)
        var plain = configuration
        plain.manifestMode = false
        plain.cacheDirectory = nil
        let bundle = try await TabClient.downloadBundle(plain)

        let draft = try await Self.send(
            "PATCH", url, "/v1/accounts/jack/layout?publish=false", #"{"initialTab":"home"}"#, "application/merge-patch+json")
        #expect(draft.status == 200)
        let candidate = try #require(draft.header("Layout-Version").flatMap { Int($0) })
        let rollout = try await Self.send(
            "POST", url, "/v1/accounts/jack/layout/rollout",
            #"{"version":\#(candidate),"steps":[{"percent":50,"hold":"PT1H"}],"seed":"fixed-seed"}"#, "application/json")
        #expect(rollout.status == 201)

        let client = try TabClient(configuration: configuration, bundle: bundle)
        #expect(try await client.refresh() == .notModified, "the stable arm: the bundled version")
        let at = try #require(client.nextSwitch, "no candidate prefetched")
        #expect(abs(at.timeIntervalSinceNow - 3600) < 120, "the switch at the step, an hour from now: \(at)")
        #expect(FileManager.default.fileExists(atPath: cache.appendingPathComponent("jack.tabs.prefetch.json").path))

        server.terminate()
        server.waitUntilExit()
        running = false
        clock.set(at)
        let switched = try #require(client.switchIfDue(), "no switch at the step's time")
        #expect(switched.version == candidate && client.current.initialTab?.id == "home")
        let relaunched = try TabClient(configuration: configuration, bundle: bundle)
        #expect(relaunched.source == .cache && relaunched.current.version == candidate)
    }

    static func freePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw TestFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func waitUntilReady(_ url: URL) async throws {
        for _ in 0..<600 {
            if let (_, response) = try? await URLSession.shared.data(from: url.appendingPathComponent("readyz")),
                (response as? HTTPURLResponse)?.statusCode == 200
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("tabserver did not become ready")
    }

    /// A management request with the current `If-Match` of jack's layout.
    static func send(_ method: String, _ url: URL, _ path: String, _ body: String, _ type: String) async throws -> HTTPAnswer {
        var current = URLRequest(url: try #require(URL(string: url.absoluteString + "/v1/accounts/jack/layout")))
        current.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, head) = try await URLSession.shared.data(for: current)
        var request = URLRequest(url: try #require(URL(string: url.absoluteString + path)))
        request.httpMethod = method
        request.httpBody = Data(body.utf8)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue(type, forHTTPHeaderField: "Content-Type")
        request.setValue((head as? HTTPURLResponse)?.value(forHTTPHeaderField: "ETag"), forHTTPHeaderField: "If-Match")
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields { if let name = name as? String, let value = value as? String { headers[name] = value } }
        return HTTPAnswer(status: http.statusCode, headers: headers, body: data)
    }
}
