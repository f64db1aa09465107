import Foundation
import Testing

@testable import TabClient

/// Every scenario of `Clients/conformance/scenarios` (its README describes the format), the ones the Java client's
/// `ConformanceTest` runs too, against a ``RawHTTPResponder`` on a real socket that plays each step's answers.
@Suite struct ConformanceTests {
    /// `Clients/conformance`: `TABCLIENT_CONFORMANCE`, else beside this package.
    static let directory: URL = {
        if let path = ProcessInfo.processInfo.environment["TABCLIENT_CONFORMANCE"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("conformance")
    }()

    static let scenarios: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("scenarios").path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }()

    @Test func theSuiteIsThere() {
        #expect(Self.scenarios.count >= 12, "\(Self.scenarios.count) scenarios in \(Self.directory.path)")
    }

    @Test(arguments: scenarios)
    func scenario(_ name: String) async throws {
        let run = try ScenarioRun(file: Self.directory.appendingPathComponent("scenarios").appendingPathComponent(name))
        let failures = try await run.run()
        for failure in failures { Issue.record(Comment(rawValue: "\(name): \(failure)")) }
    }
}

/// A scenario's format error: a key the format does not have, a value of the wrong type.
struct ScenarioError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One run of one scenario: its server, cache directory, client, and what went wrong.
final class ScenarioRun {
    typealias Object = [String: Any]

    /// What the server does with one request of a step.
    struct Planned: Sendable {
        var reply: RawHTTPResponder.Reply
        var delay: Duration?
    }

    /// The current step's answers, and the number of requests the server had before it.
    struct Script: Sendable {
        var planned: [Planned] = []
        var holdAfter = false
        var start = 0
    }

    let scenario: Object
    var bundleDocument: Object
    var failures: [String] = []
    let events = EventLog()
    var eventsSeen = 0
    let script = Locked(Script())
    var configuration: TabClientConfiguration!
    var bundle: LayoutBundle!
    var cacheDirectory: URL?
    var client: TabClient!
    var previousInstallID: String?
    /// The cache file's bytes and inode at the end of the step before (nil: no file).
    var snapshot: (Data, UInt64)?
    /// The device's clock: `config.clock`, moved only by a step's `clock`.
    var clock: ManualClock!

    /// `signed/fixtures.json`: exact bodies with their signatures, made by `signed/make-fixtures.py`.
    let signedFixtures: Object

    init(file: URL) throws {
        scenario = try Self.object(Data(contentsOf: file), file.lastPathComponent)
        // The format's keys are the schema's: a key it does not name fails the scenario before anything runs.
        try ScenarioSchema.load().checkKeys(scenario)
        bundleDocument = try Self.object(
            Data(contentsOf: ConformanceTests.directory.appendingPathComponent("jack.bundle.json")), "jack.bundle.json")
        let fixtures = try Self.object(
            Data(contentsOf: ConformanceTests.directory.appendingPathComponent("signed/fixtures.json")), "signed/fixtures.json")
        signedFixtures = fixtures["fixtures"] as? Object ?? [:]
    }

    /// A signed fixture's body (with `tamper` [from, to] replacing the first `from`) and its `Tabs-Signature`.
    func signed(_ name: Any?, tamper: Any?) throws -> (body: String, signature: String) {
        guard let name = name as? String, let fixture = signedFixtures[name] as? Object, var body = fixture["body"] as? String,
            let signature = fixture["signature"] as? String
        else { throw ScenarioError("no signed fixture \(name ?? "nil")") }
        if let tamper {
            guard let pair = tamper as? [String], pair.count == 2, let range = body.range(of: pair[0]) else {
                throw ScenarioError("tamper \(tamper) does not apply to \(name)")
            }
            body.replaceSubrange(range, with: pair[1])
        }
        return (body, signature)
    }

    /// `keyid="K", sig="S"` as `{"keyid", "sig"}` with the base64 body: how bundles and cache files keep them.
    static func signedMember(body: String, signature: String) throws -> Object {
        guard let parsed = Signature(header: signature) else { throw ScenarioError("not a signature: \(signature)") }
        return ["body": Data(body.utf8).base64EncodedString(), "keyid": parsed.keyID, "sig": parsed.value]
    }

    static func object(_ data: Data, _ name: String) throws -> Object {
        guard let object = try JSONSerialization.jsonObject(with: data) as? Object else { throw ScenarioError("\(name) is not an object") }
        return object
    }

    /// A layout of the format: the bundle's first layout with `version`, `title`, `name`, `brokenTag`.
    func layout(_ spec: Object) throws -> Object {
        let representations = bundleDocument["representations"] as? [Object] ?? []
        guard var layout = representations.first?["layout"] as? Object, var tabs = layout["tabs"] as? [Object], tabs.count > 1 else {
            throw ScenarioError("jack.bundle.json has no layout with two tabs")
        }
        if let version = spec["version"] as? Int {
            layout["version"] = version
            tabs[0]["title"] = "Version \(version)"
        }
        if let title = spec["title"] as? String { tabs[0]["title"] = title }
        if let name = spec["name"] as? String { layout["layout"] = name }
        if spec["brokenTag"] as? Bool == true { tabs[1]["tag"] = 9 }
        // Keys of newer layouts: merged into the appearance, the first tab, the document.
        for (key, value) in spec["appearance"] as? Object ?? [:] {
            var appearance = layout["appearance"] as? Object ?? [:]
            appearance[key] = value
            layout["appearance"] = appearance
        }
        for (key, value) in spec["firstTab"] as? Object ?? [:] { tabs[0][key] = value }
        for (key, value) in spec["extra"] as? Object ?? [:] { layout[key] = value }
        layout["tabs"] = tabs
        return layout
    }

    func run() async throws -> [String] {
        let c = scenario["config"] as? Object ?? [:]
        clock = try ManualClock(c["clock"] as? String ?? "2026-01-01T00:00:00Z")
        if let changes = scenario["bundle"] as? Object {
            if var representations = bundleDocument["representations"] as? [Object], var layout = representations[0]["layout"] as? Object {
                if changes["signed"] != nil {
                    let (body, signature) = try signed(changes["signed"], tamper: changes["tamper"])
                    let (original, _) = try signed(changes["signed"], tamper: nil)
                    layout = try Self.object(Data(original.utf8), "signed body")
                    representations[0]["signed"] = try Self.signedMember(body: body, signature: signature)
                }
                if let version = changes["version"] { layout["version"] = version }
                representations[0]["layout"] = layout
                bundleDocument["representations"] = representations
            }
        }
        var keys: SigningKeys?
        if let list = c["signingKeys"] as? [String] { keys = try SigningKeys(base64: list) }
        if let document = c["signingKeysDocument"] as? Object {
            keys = try SigningKeys(keysDocument: JSONSerialization.data(withJSONObject: document))
        }
        bundle = try LayoutBundle.decode(JSONSerialization.data(withJSONObject: bundleDocument))
        let script = self.script
        let server = try RawHTTPResponder { index, _ in
            let planned = script.withLock { script -> Planned? in
                let position = index - script.start
                if position < script.planned.count { return script.planned[position] }
                return script.holdAfter ? nil : script.planned.last
            }
            guard let planned else { return .hold }
            if let delay = planned.delay { Thread.sleep(forTimeInterval: delay.timeInterval) }
            return planned.reply
        }
        defer { server.stop() }
        if c["cache"] as? Bool ?? true { cacheDirectory = try Fixtures.temporaryDirectory() }
        defer { if let cacheDirectory { try? FileManager.default.removeItem(at: cacheDirectory) } }
        configuration = TabClientConfiguration(
            server: server.url, account: c["account"] as? String ?? "jack", preferredLanguages: c["languages"] as? [String] ?? ["en"],
            platform: c["platform"] as? String, appVersion: c["appVersion"] as? String, environment: c["environment"] as? String,
            installID: c["installId"] as? String, cacheDirectory: cacheDirectory,
            requestTimeout: .milliseconds(c["requestTimeoutMs"] as? Int ?? 5000),
            longPollWait: .seconds(c["longPollWaitSeconds"] as? Int ?? 30),
            initialBackoff: .milliseconds(c["initialBackoffMs"] as? Int ?? 50),
            maximumBackoff: .milliseconds(c["maximumBackoffMs"] as? Int ?? 2000),
            manifestMode: c["manifest"] as? Bool ?? false, signingKeys: keys, clock: clock,
            onEvent: events.handler)
        // The launch guard is off unless a scenario sets it, so that the scenarios written before it still prove what they say.
        configuration.launchAttempts = c["launchAttempts"] as? Int ?? 0
        configuration.readyTimeout = .milliseconds(c["readyTimeoutMs"] as? Int ?? 0)
        // Nothing is sent in tests unless a scenario asks.
        configuration.reports = c["reports"] as? Bool ?? false
        if let files = scenario["files"] as? Object { try write(files) }
        if let wanted = scenario["initError"] as? String {
            do {
                _ = try TabClient(configuration: configuration, bundle: bundle)
                failures.append("the client was made, expected the error \(wanted)")
            } catch {
                if Self.name(of: error) != wanted { failures.append("the client was refused with \(error), expected \(wanted)") }
            }
            return failures
        }
        client = try TabClient(configuration: configuration, bundle: bundle)
        for (index, step) in (scenario["steps"] as? [Object] ?? []).enumerated() { try await run(step, index: index, server: server) }
        return failures
    }

    func write(_ files: Object) throws {
        guard let cacheDirectory else { throw ScenarioError("files without a cache directory") }
        for (name, value) in files {
            guard let spec = value as? Object else { throw ScenarioError("files.\(name) is not an object") }
            var data: Data
            if let text = spec["text"] as? String {
                data = Data(text.utf8)
            } else if let entry = spec["prefetch"] as? Object {
                var document: Object = [
                    "etag": entry["etag"] as? String ?? "", "at": entry["at"] as? String ?? "", "revision": entry["revision"] ?? 0,
                ]
                if entry["signed"] != nil {
                    let (body, signature) = try signed(entry["signed"], tamper: entry["tamper"])
                    guard let parsed = Signature(header: signature) else { throw ScenarioError("not a signature: \(signature)") }
                    document["body"] = body
                    document["keyid"] = parsed.keyID
                    document["sig"] = parsed.value
                } else {
                    let layout = try JSONSerialization.data(withJSONObject: layout(entry["layout"] as? Object ?? [:]))
                    document["body"] = String(decoding: layout, as: UTF8.self)
                }
                data = try JSONSerialization.data(withJSONObject: document)
            } else if let entry = spec["cache"] as? Object {
                var document: Object = ["etag": entry["etag"] as? String ?? ""]
                if entry["signed"] != nil {
                    let (body, signature) = try signed(entry["signed"], tamper: entry["tamper"])
                    let (original, _) = try signed(entry["signed"], tamper: nil)
                    document["layout"] = try Self.object(Data(original.utf8), "signed body")
                    document["signed"] = try Self.signedMember(body: body, signature: signature)
                } else {
                    document["layout"] = try layout(entry["layout"] as? Object ?? [:])
                }
                if entry["perInstall"] as? Bool == true { document["perInstall"] = true }
                if let revision = entry["revision"] as? Int { document["revision"] = revision }
                data = try JSONSerialization.data(withJSONObject: document)
            } else {
                throw ScenarioError("files.\(name) has neither text nor cache")
            }
            try data.write(to: cacheDirectory.appendingPathComponent(name))
        }
    }

    func planned(_ answers: [Object]) throws -> [Planned] {
        try answers.map { answer in
            var headers = (answer["headers"] as? [String: String] ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            var body = Data()
            if answer["signed"] != nil {
                let (text, signature) = try signed(answer["signed"], tamper: answer["tamper"])
                body = Data(text.utf8)
                headers.append(("Content-Type", "application/json"))
                if answer["unsigned"] as? Bool != true { headers.append(("Tabs-Signature", signature)) }
            } else if let spec = answer["layout"] as? Object {
                body = try JSONSerialization.data(withJSONObject: layout(spec))
                if !headers.contains(where: { $0.0.caseInsensitiveCompare("Content-Type") == .orderedSame }) {
                    headers.append(("Content-Type", "application/json"))
                }
            } else if let text = answer["body"] as? String {
                body = Data(text.utf8)
            } else if let spec = answer["bodyRepeat"] as? Object {
                let text =
                    (spec["before"] as? String ?? "") + String(repeating: spec["text"] as? String ?? "", count: spec["times"] as? Int ?? 0)
                    + (spec["after"] as? String ?? "")
                body = Data(text.utf8)
            }
            if let truncate = answer["truncate"] as? Int { body = body.prefix(truncate) }
            let delay = (answer["delayMs"] as? Int).map { Duration.milliseconds($0) }
            if answer["drop"] as? Bool == true { return Planned(reply: .drop, delay: delay) }
            if answer["hang"] as? Bool == true { return Planned(reply: .hold, delay: nil) }
            return Planned(reply: .respond(status: answer["status"] as? Int ?? 200, headers: headers, body: body), delay: delay)
        }
    }

    func run(_ step: Object, index: Int, server: RawHTTPResponder) async throws {
        let action = step["do"] as? String ?? ""
        let place = "step \(index) (\(action))"
        let planned = try planned(step["answers"] as? [Object] ?? [])
        let before = server.requests.count
        script.withLock { $0 = Script(planned: planned, holdAfter: step["then"] as? String == "hold", start: before) }
        var outcome: TabClient.RefreshOutcome?
        var error: TabClientError?
        var delivered: CompiledLayout?
        var switched: CompiledLayout?
        var moveTo: Date?
        if let text = step["clock"] as? String {
            guard let date = RFC3339.date(text) else { throw ScenarioError("\(place): clock \(text) is not an RFC 3339 time") }
            moveTo = date
        }
        // While following (next, poll) the clock moves once the step's first request has come, so that the switch wakes a
        // poll in progress; else before the action.
        let following = action == "next" || action == "poll"
        if let moveTo, !following { clock.set(moveTo) }
        let clock = self.clock!
        let moveWhenAsked = Task { [moveTo] in
            guard following, let moveTo else { return }
            _ = await Fixtures.eventually(within: .seconds(15)) { server.requests.count > before }
            clock.set(moveTo)
        }
        let started = ContinuousClock.now
        switch action {
        case "check":
            break
        case "switch":
            switched = client.switchIfDue()
        case "refresh":
            do {
                outcome = try await client.refresh()
            } catch let failure {
                error = failure
            }
        case "next":
            let client = self.client!
            let received = Locked<CompiledLayout?>(nil)
            let task = Task {
                var iterator = client.updates().makeAsyncIterator()
                let layout = await iterator.next()
                received.withLock { $0 = layout }
            }
            _ = await Fixtures.eventually(within: .seconds(15)) { received.withLock { $0 != nil } }
            task.cancel()
            await task.value
            delivered = received.withLock { $0 }
            if delivered == nil { failures.append("\(place): no layout delivered within 15 s") }
        case "poll":
            let wanted = step["requests"] as? Int ?? 1
            let client = self.client!
            let task = Task { for await _ in client.updates() {} }
            _ = await Fixtures.eventually(within: .seconds(60)) { server.requests.count - before >= wanted }
            task.cancel()
            await task.value
        case "markRendered":
            client.markRendered()
        case "reportTabFailed":
            client.reportTabFailed(step["tab"] as? String ?? "", reason: step["reason"] as? String ?? "")
        case "flushReports":
            await client.flushReports()
        case "background":
            await client.appDidEnterBackground().value
        case "wait":
            let kind = step["for"] as? String ?? ""
            let events = self.events
            let seen = eventsSeen
            let came = await Fixtures.eventually(within: .seconds(5)) { events.all.dropFirst(seen).contains { Self.name(of: $0) == kind } }
            if !came { failures.append("\(place): no \(kind) event within 5 s") }
        case "relaunch":
            previousInstallID = client.installID
            client = try TabClient(configuration: configuration, bundle: bundle)
        default:
            throw ScenarioError("\(place): unknown action")
        }
        await moveWhenAsked.value
        let elapsed = ContinuousClock.now - started
        let all = events.all
        let stepEvents = Array(all[eventsSeen...])
        eventsSeen = all.count
        let requests = Array(server.requests.dropFirst(before))
        try check(
            step["expect"] as? Object ?? [:], place: place, outcome: outcome, error: error, delivered: delivered, switched: switched,
            elapsed: elapsed, events: stepEvents, requests: requests)
        snapshot = try cacheSnapshot()
    }

    var cacheFile: URL? {
        guard let cacheDirectory else { return nil }
        let name = configuration.environment.map { "\(configuration.account)@\($0)" } ?? configuration.account
        return cacheDirectory.appendingPathComponent("\(name).tabs.json")
    }

    /// The prefetched candidate's file: `<account>.tabs.prefetch.json`.
    var prefetchFile: URL? {
        cacheFile.map {
            $0.deletingLastPathComponent().appendingPathComponent(
                $0.lastPathComponent.replacingOccurrences(of: ".tabs.json", with: ".tabs.prefetch.json"))
        }
    }

    func cacheSnapshot() throws -> (Data, UInt64)? {
        guard let file = cacheFile, FileManager.default.fileExists(atPath: file.path) else { return nil }
        return (try Data(contentsOf: file), try OlderAnswerTests.identity(of: file).inode)
    }

    var bundleValidators: String {
        bundle.representation(
            preferredLanguages: configuration.preferredLanguages, platform: configuration.platform, appVersion: configuration.appVersion)?
            .validators.joined(separator: ", ") ?? ""
    }

    /// `$installId`, `$bundleValidators`, or the value itself.
    func resolve(_ value: String) -> String {
        switch value {
        case "$installId": return client.installID
        case "$bundleValidators": return bundleValidators
        default: return value
        }
    }

    static func name(of outcome: TabClient.RefreshOutcome) -> String {
        switch outcome {
        case .notModified: "notModified"
        case .unchanged: "unchanged"
        case .updated: "updated"
        case .droppedOlder: "droppedOlder"
        case .droppedOlderManifest: "droppedOlderManifest"
        case .blocked: "blocked"
        case .revoked: "revoked"
        }
    }

    static func name(of error: TabClientError) -> String {
        switch error {
        case .unexpectedStatus: "status"
        case .missingETag: "missingETag"
        case .invalidLayout: "invalidLayout"
        case .timedOut: "timedOut"
        case .transport: "transport"
        case .cancelled: "cancelled"
        case .invalidBundle: "invalidBundle"
        case .cacheWriteFailed: "cacheWriteFailed"
        case .invalidEnvironment: "invalidEnvironment"
        case .invalidInstallID: "invalidInstallId"
        case .invalidSignature: "invalidSignature"
        case .invalidSigningKey: "invalidSigningKey"
        case .invalidManifest: "invalidManifest"
        }
    }

    static func name(of event: TabClientEvent) -> String {
        switch event {
        case .requestSent: "requestSent"
        case .notModified: "notModified"
        case .unchanged: "unchanged"
        case .updated: "updated"
        case .droppedOlder: "droppedOlder"
        case .droppedOlderManifest: "droppedOlderManifest"
        case .failed: "failed"
        case .cacheIgnored: "cacheIgnored"
        case .reverted: "reverted"
        case .blocked: "blocked"
        case .revoked: "revoked"
        }
    }

    /// Where `actual` (a request's JSON) lacks what `expected` holds (objects: the keys given; arrays: the same length, each
    /// element in turn; `"$installId"` is the client's id), or nil.
    func contains(_ actual: Any?, _ expected: Any, at pointer: String) -> String? {
        switch expected {
        case let object as Object:
            guard let actual = actual as? Object else { return "\(pointer): not an object" }
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                if let difference = contains(actual[key], value, at: "\(pointer)/\(key)") { return difference }
            }
            return nil
        case let array as [Any]:
            guard let actual = actual as? [Any], actual.count == array.count else {
                return "\(pointer): \((actual as? [Any])?.count ?? -1) elements, expected \(array.count)"
            }
            for (index, (one, other)) in zip(actual, array).enumerated() {
                if let difference = contains(one, other, at: "\(pointer)/\(index)") { return difference }
            }
            return nil
        case let text as String:
            return actual as? String == resolve(text) ? nil : "\(pointer): \(actual ?? "none"), expected \(resolve(text))"
        default:
            return "\(actual ?? "none")" == "\(expected)" ? nil : "\(pointer): \(actual ?? "none"), expected \(expected)"
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// What differs between `actual` and the expected layout (only the keys given), or nil.
    static func compare(_ expected: Object, _ actual: CompiledLayout) throws -> String? {
        var differences: [String] = []
        if let version = expected["version"] as? Int, actual.version != version {
            differences.append("version \(actual.version.map(String.init) ?? "none"), expected \(version)")
        }
        if let title = expected["title"] as? String, actual.tabs.first?.title != title {
            differences.append("first title '\(actual.tabs.first?.title ?? "")', expected '\(title)'")
        }
        if let name = expected["name"] as? String, actual.layout != name {
            differences.append("layout '\(actual.layout)', expected '\(name)'")
        }
        return differences.isEmpty ? nil : differences.joined(separator: ", ")
    }

    func check(
        _ expect: Object, place: String, outcome: TabClient.RefreshOutcome?, error: TabClientError?, delivered: CompiledLayout?,
        switched: CompiledLayout?, elapsed: Duration, events: [TabClientEvent], requests: [RawHTTPResponder.Received]
    ) throws {
        func fail(_ text: String) { failures.append("\(place): \(text)") }
        if let wanted = expect["outcome"] as? String {
            let actual = outcome.map(Self.name(of:)) ?? "error \(error.map { "\($0)" } ?? "none")"
            if actual != wanted { fail("outcome \(actual), expected \(wanted)") }
        }
        if let wanted = expect["error"] as? String {
            let actual = error.map(Self.name(of:)) ?? "no error (\(outcome.map(Self.name(of:)) ?? "none"))"
            if actual != wanted { fail("error \(actual)\(error.map { " (\($0))" } ?? ""), expected \(wanted)") }
        }
        var status: Int?
        var detail: String?
        if case .unexpectedStatus(let code, let text, _)? = error {
            status = code
            detail = text
        }
        if let wanted = expect["status"] as? Int, status != wanted {
            fail("status \(status.map(String.init) ?? "none"), expected \(wanted)")
        }
        if let wanted = expect["detail"] as? String, detail != wanted { fail("detail \(detail ?? "none"), expected \(wanted)") }
        if let limit = expect["errorTextAtMostBytes"] as? Int {
            let text = error.map { "\($0)" } ?? ""
            if error == nil || text.utf8.count > limit {
                fail("error text of \(text.utf8.count) bytes (\(text.prefix(200))…), expected at most \(limit)")
            }
        }
        if let wanted = expect["layout"] as? Object, let difference = try Self.compare(wanted, client.current) {
            fail("the layout shown: \(difference)")
        }
        if let wanted = expect["delivered"] as? Object {
            if let delivered {
                if let difference = try Self.compare(wanted, delivered) { fail("the layout delivered: \(difference)") }
            } else {
                fail("no layout delivered")
            }
        }
        if let wanted = expect["source"] as? String, "\(client.source)" != wanted { fail("source \(client.source), expected \(wanted)") }
        if expect.keys.contains("nextSwitch") {
            let actual = client.nextSwitch.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
            let wanted = (expect["nextSwitch"] as? String).flatMap(RFC3339.milliseconds)
            if actual != wanted {
                fail("next switch \(client.nextSwitch.map { "\($0)" } ?? "none"), expected \(expect["nextSwitch"] ?? "none")")
            }
        }
        if let wanted = expect["switched"] as? Bool, (switched != nil) != wanted {
            fail(switched.map { "switched to v\($0.version ?? 0)" } ?? "did not switch")
        }
        if expect.keys.contains("prefetch") {
            let file = prefetchFile
            let exists = file.map { FileManager.default.fileExists(atPath: $0.path) } ?? false
            if let wanted = expect["prefetch"] as? Object {
                if let file, exists {
                    let stored = try Self.object(Data(contentsOf: file), file.lastPathComponent)
                    let body = try Self.object(Data((stored["body"] as? String ?? "").utf8), "prefetch body")
                    if let etag = wanted["etag"] as? String, stored["etag"] as? String != etag {
                        fail("prefetch etag \(stored["etag"] ?? "none"), expected \(etag)")
                    }
                    if let version = wanted["version"] as? Int, body["version"] as? Int != version {
                        fail("prefetch version \(body["version"] ?? "none"), expected \(version)")
                    }
                    if let at = wanted["at"] as? String, stored["at"] as? String != at {
                        fail("prefetch at \(stored["at"] ?? "none"), expected \(at)")
                    }
                    if let revision = wanted["revision"] as? Int, stored["revision"] as? Int != revision {
                        fail("prefetch revision \(stored["revision"] ?? "none"), expected \(revision)")
                    }
                } else {
                    fail("no prefetch file \(file?.lastPathComponent ?? "(no cache directory)")")
                }
            } else if exists {
                fail("a prefetch file exists: \(file?.lastPathComponent ?? "")")
            }
        }
        if let wanted = expect["validators"] {
            let expected = (wanted as? String).map(resolve) ?? (wanted as? [String] ?? []).joined(separator: ", ")
            let actual = client.validators.joined(separator: ", ")
            if actual != expected { fail("validators \(actual), expected \(expected)") }
        }
        if expect.keys.contains("cache") {
            let file = cacheFile
            let exists = file.map { FileManager.default.fileExists(atPath: $0.path) } ?? false
            if let wanted = expect["cache"] as? Object {
                if let file, exists {
                    let stored = try Self.object(Data(contentsOf: file), file.lastPathComponent)
                    if let etag = wanted["etag"] as? String, stored["etag"] as? String != etag {
                        fail("cache etag \(stored["etag"] ?? "none"), expected \(etag)")
                    }
                    if let version = wanted["version"] as? Int, (stored["layout"] as? Object)?["version"] as? Int != version {
                        fail("cache version \((stored["layout"] as? Object)?["version"] ?? "none"), expected \(version)")
                    }
                    if let perInstall = wanted["perInstall"] as? Bool, (stored["perInstall"] as? Bool ?? false) != perInstall {
                        fail("cache perInstall \(stored["perInstall"] ?? false), expected \(perInstall)")
                    }
                } else {
                    fail("no cache file \(file?.lastPathComponent ?? "(no cache directory)")")
                }
            } else if exists {
                fail("a cache file exists: \(file?.lastPathComponent ?? "")")
            }
        }
        if expect["cacheUnchanged"] as? Bool == true {
            let now = try cacheSnapshot()
            let same = snapshot == nil ? now == nil : now != nil && snapshot?.0 == now?.0 && snapshot?.1 == now?.1
            if !same { fail("the cache file was written (or removed)") }
        }
        if let wanted = expect["directory"] as? [String] {
            let actual = cacheDirectory.map { ((try? FileManager.default.contentsOfDirectory(atPath: $0.path)) ?? []).sorted() } ?? []
            if actual != wanted { fail("cache directory \(actual), expected \(wanted)") }
        }
        if let files = expect["files"] as? [String: String] {
            for (name, content) in files.sorted(by: { $0.key < $1.key }) {
                let file = cacheDirectory?.appendingPathComponent(name)
                let actual = file.flatMap { try? String(contentsOf: $0, encoding: .utf8) }
                if actual != resolve(content) { fail("file \(name) holds \(actual ?? "nothing"), expected \(resolve(content))") }
            }
        }
        if let wanted = expect["blocked"] as? [Int], client.blockedVersions != wanted {
            fail("blocked \(client.blockedVersions), expected \(wanted)")
        }
        if let wanted = expect["revoked"] as? [Int], client.revokedVersions != wanted {
            fail("revoked \(client.revokedVersions), expected \(wanted)")
        }
        if let wanted = expect["pendingRender"] as? Bool, client.isPendingRender != wanted {
            fail("pending render \(client.isPendingRender), expected \(wanted)")
        }
        if expect.keys.contains("guard") {
            let stored = try cacheFile.flatMap { file in
                FileManager.default.fileExists(atPath: file.path) ? try Self.object(Data(contentsOf: file), file.lastPathComponent) : nil
            }
            let actual = (stored?["guard"]).map { $0 as? NSDictionary } ?? nil
            let wanted = expect["guard"] as? NSDictionary
            if actual != wanted {
                fail("cache file guard \(actual.map { "\($0)" } ?? "none"), expected \(wanted.map { "\($0)" } ?? "none")")
            }
        }
        if let wanted = expect["reverted"] as? Object {
            let reverts = events.compactMap { event -> (Int, String)? in
                if case .reverted(let version, let reason, _) = event { (version, reason) } else { nil }
            }
            if !reverts.contains(where: { $0.0 == wanted["version"] as? Int && $0.1 == wanted["reason"] as? String }) {
                fail("no reverted event \(wanted) among \(reverts)")
            }
        }
        if let wanted = expect["colors"] as? Object {
            for (scheme, name) in [(CompiledLayout.ColorScheme.light, "light"), (.dark, "dark")] {
                guard let colours = wanted[name] as? Object else { continue }
                let actual = client.current.appearance.colors(for: scheme)
                let values = [
                    "backgroundColor": actual.backgroundColor, "tintColor": actual.tintColor,
                    "unselectedTintColor": actual.unselectedTintColor,
                ]
                for (key, value) in colours.sorted(by: { $0.key < $1.key }) where values[key] != .some(value as? String) {
                    fail("\(name) \(key) \(values[key].flatMap { $0 } ?? "none"), expected \(value)")
                }
            }
        }
        if let wanted = expect["firstTab"] as? Object, let tab = client.current.tabs.first {
            let values = [
                "accessibilityLabel": tab.accessibilityLabel, "accessibilityLabelKey": tab.accessibilityLabelKey,
                "accessibilityHint": tab.accessibilityHint, "role": tab.role,
            ]
            for (key, value) in wanted.sorted(by: { $0.key < $1.key }) where values[key] != .some(value as? String) {
                fail("first tab \(key) \(values[key].flatMap { $0 } ?? "none"), expected \(value)")
            }
        }
        if let wanted = expect["groups"] as? [Object] {
            let actual = client.current.groups.map { ["id": $0.id, "title": $0.title, "tabs": $0.tabs.joined(separator: ",")] }
            let expected = wanted.map {
                [
                    "id": $0["id"] as? String ?? "", "title": $0["title"] as? String ?? "",
                    "tabs": ($0["tabs"] as? [String] ?? []).joined(separator: ","),
                ]
            }
            if actual != expected { fail("groups \(actual), expected \(expected)") }
        }
        if let wanted = expect["queued"] as? [Object] {
            let queued = client.queuedReports
            if queued.count != wanted.count { fail("\(queued.count) reports queued (\(queued)), expected \(wanted.count)") }
            for (report, expected) in zip(queued, wanted) {
                let same =
                    (expected["version"] as? Int).map { $0 == report.version } ?? true
                    && (expected["kind"] as? String).map { $0 == report.kind } ?? true
                    && (expected["tab"] as? String).map { $0 == report.tab } ?? true
                    && (expected["reason"] as? String).map { $0 == report.reason } ?? true
                if !same { fail("queued \(report), expected \(expected)") }
            }
        }
        if let wanted = expect["installId"] as? String {
            let actual = client.installID
            let ok =
                switch wanted {
                case "$uuid4": InstallIDTests.isLowercaseUUIDv4(actual)
                case "$previousInstallId": actual == previousInstallID
                default: actual == wanted
                }
            if !ok { fail("install id \(actual), expected \(wanted) \(previousInstallID ?? "")") }
        }
        if let wanted = expect["events"] as? [String] {
            let kinds = events.map(Self.name(of:))
            for kind in wanted where !kinds.contains(kind) { fail("no \(kind) event among \(kinds)") }
        }
        if let wanted = expect["errors"] as? [String] {
            let kinds = events.compactMap { event -> String? in
                switch event {
                case .failed(let error, _, _), .cacheIgnored(let error, _): Self.name(of: error)
                default: nil
                }
            }
            for kind in wanted where !kinds.contains(kind) { fail("no failure \(kind) among \(kinds)") }
        }
        let delays = events.compactMap { event -> Int? in
            if case .failed(_, let retryIn?, _) = event { Self.milliseconds(retryIn) } else { nil }
        }
        if let wanted = expect["retryIn"] as? [Int], delays != wanted { fail("retry delays \(delays), expected \(wanted)") }
        if let bounds = expect["retryInBetween"] as? [[Int]] {
            for (index, bound) in bounds.enumerated() {
                guard index < delays.count else {
                    fail("only \(delays.count) retry delays")
                    break
                }
                if delays[index] < bound[0] || delays[index] > bound[1] {
                    fail("retry delay \(index) is \(delays[index]) ms, expected \(bound[0])–\(bound[1])")
                }
            }
            if zip(delays, bounds).allSatisfy({ $0 == $1[1] }) { fail("no jitter in \(delays)") }
        }
        if let count = expect["requestCount"] as? Int, requests.count != count { fail("\(requests.count) requests, expected \(count)") }
        for (index, wanted) in (expect["requests"] as? [Object] ?? []).enumerated() {
            guard index < requests.count else {
                fail("request \(index) never came (\(requests.count) requests)")
                break
            }
            let request = requests[index]
            if let method = wanted["method"] as? String, !request.head.hasPrefix("\(method) ") {
                fail("request \(index) is \(request.head.prefix(while: { $0 != " " })), expected \(method)")
            }
            if let json = wanted["json"] {
                let body = try? JSONSerialization.jsonObject(with: request.body)
                if let difference = contains(body, json, at: "") { fail("request \(index) body \(difference)") }
            }
            if let target = wanted["target"] as? String, request.target != target {
                fail("request \(index) target \(request.target), expected \(target)")
            }
            for (name, value) in (wanted["headers"] as? [String: String] ?? [:]).sorted(by: { $0.key < $1.key }) {
                let expected = resolve(value)
                if request.header(name) != expected {
                    fail("request \(index) \(name): \(request.header(name) ?? "none"), expected \(expected)")
                }
            }
            for name in wanted["absent"] as? [String] ?? [] {
                if let value = request.header(name) { fail("request \(index) sent \(name): \(value)") }
            }
            if let gap = wanted["gapAtLeastMs"] as? Int, index > 0 {
                let actual = Self.milliseconds(request.at - requests[index - 1].at)
                if actual < gap { fail("request \(index) came \(actual) ms after the one before, expected ≥ \(gap)") }
            }
        }
        let took = Self.milliseconds(elapsed)
        if let least = expect["elapsedAtLeastMs"] as? Int, took < least { fail("took \(took) ms, expected ≥ \(least)") }
        if let most = expect["elapsedAtMostMs"] as? Int, took > most { fail("took \(took) ms, expected ≤ \(most)") }
    }
}
