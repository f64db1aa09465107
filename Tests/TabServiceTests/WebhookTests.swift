import Foundation
import TabServiceTestSupport
import TabStore
import TabTestSupport
import TabWebhooks
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A receiver verifying deliveries with the specification's own Python library (`scripts/webhook-receiver`).
final class WebhookReceiver: @unchecked Sendable {
    // Safety: the fields are set once in init; the process is only terminated in deinit.
    let process = Process()
    let port: Int
    let secretFile: String
    let logFile: String

    /// A receiver on `port` (0: one the system picks).
    init(port: Int = 0) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiver-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        secretFile = directory + "/secret"
        logFile = directory + "/log"
        _ = FileManager.default.createFile(atPath: secretFile, contents: Data())
        process.executableURL = ServiceHarness.repository.appendingPathComponent("scripts/webhook-receiver")
        process.arguments = [secretFile, logFile, String(port)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice  // a child holding the test's stderr keeps `swift test` waiting
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw RawConnection.Failure(description: "the receiver printed no port: '\(line)'")
        }
        self.port = port
    }

    deinit { stop() }

    /// Ends the receiver (the script `exec`s Python, so this is the server itself).
    func stop() {
        guard process.isRunning else { return }
        // SIGKILL: the test process blocks SIGTERM for its servers, and children inherit that mask. Not
        // waitUntilExit: it spins a run loop that a test's task never turns.
        kill(process.processIdentifier, SIGKILL)
    }

    /// A port nothing listens on now (the system's pick, released).
    static func freePort() throws -> Int {
        let (fd, port) = try boundSocket(listening: false)
        close(fd)
        return port
    }

    /// A TCP socket bound to a port of the system's pick on 127.0.0.1 (listening when asked: the kernel then
    /// completes handshakes into its backlog whether or not anyone accepts); the caller closes it.
    static func boundSocket(listening: Bool) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, !listening || listen(fd, 64) == 0 else {
            close(fd)
            throw RawConnection.Failure(description: "no free port")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    func use(secret: String) throws { try Data(secret.utf8).write(to: URL(fileURLWithPath: secretFile)) }

    /// The deliveries received so far, waiting up to `seconds` for at least `count`.
    func received(atLeast count: Int, within seconds: Double = 15) async throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            let entries = text.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }
            if entries.count >= count || Date() > deadline { return entries }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

@Suite(.serialized) struct WebhookTests {
    static let json = ServiceHarness.admin([("Content-Type", "application/json")])

    @Test func aLayoutWriteIsDeliveredAndVerifiedByTheSpecificationsLibrary() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let harness = try await ServiceHarness(webhookPolicy: .allowEverything)
        defer { harness.application.stop() }
        let client = harness.client()
        let made = try await client.send(
            "POST", "/v1/webhooks", headers: Self.json,
            body: jsonBody(["url": "http://127.0.0.1:\(receiver.port)/hook", "events": ["layout"], "accounts": ["hooked-*"]]))
        let id = try #require(made.json?["id"] as? String)
        try receiver.use(secret: try #require(made.json?["secret"] as? String))
        let put = try await client.send(
            "PUT", "/v1/accounts/hooked-1/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]),
            body: document(["Home"]))
        #expect(put.status == 201)
        _ = try await client.send(
            "PUT", "/v1/accounts/other/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]),
            body: document(["Home"]))
        let received = try await receiver.received(atLeast: 1)
        #expect(received.count == 1)
        let entry = try #require(received.first)
        #expect(entry["verified"] as? Bool == true, "\(entry["error"] ?? "")")
        let body = try #require(try JSONSerialization.jsonObject(with: Data((entry["body"] as? String ?? "").utf8)) as? [String: Any])
        #expect(body["type"] as? String == "layout.published")
        #expect((body["data"] as? [String: Any])?["account"] as? String == "hooked-1")
        #expect((body["data"] as? [String: Any])?["environment"] as? String == "production")
        #expect((body["data"] as? [String: Any])?["etag"] as? String == put.header("ETag"))
        try await Task.sleep(for: .milliseconds(300))  // the outcome is recorded after the answer
        let log = try await client.send("GET", "/v1/webhooks/\(id)/deliveries", headers: ServiceHarness.admin())
        let deliveries = try #require(log.json?["deliveries"] as? [[String: Any]])
        #expect(
            deliveries.count == 1 && deliveries.first?["state"] as? String == "delivered" && deliveries.first?["lastStatus"] as? Int == 204)
        #expect(deliveries.first?["id"] as? String == (entry["headers"] as? [String: String])?["webhook-id"])
        let metrics = String(decoding: try await client.send("GET", "/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"tabserver_webhook_attempts_total{outcome="delivered"} 1"#))
        // After a rotation the receiver still holding the old secret verifies (both sign for 24 h).
        #expect(try await client.send("POST", "/v1/webhooks/\(id)/rotate-secret", headers: ServiceHarness.admin()).status == 200)
        let second = try await client.send(
            "PUT", "/v1/accounts/hooked-2/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]),
            body: document(["Home"]))
        #expect(second.status == 201)
        let afterRotation = try await receiver.received(atLeast: 2)
        #expect(afterRotation.count == 2 && afterRotation.last?["verified"] as? Bool == true)
        #expect(((afterRotation.last?["headers"] as? [String: String])?["webhook-signature"] ?? "").split(separator: " ").count == 2)
    }

    /// A receiver that accepts connections and never answers holds its own two attempts (10 s each), never the
    /// deliveries of the others (docs/security.md, review 4, finding 5).
    @Test func aBlackHoledReceiverDoesNotHoldAHealthyOnesDeliveries() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let blackHole = try WebhookReceiver.boundSocket(listening: true)  // nobody ever accepts or reads
        defer { close(blackHole.fd) }
        let harness = try await ServiceHarness(webhookPolicy: .allowEverything)
        defer { harness.application.stop() }
        let client = harness.client()
        let dead = try await client.send(
            "POST", "/v1/webhooks", headers: Self.json,
            body: jsonBody(["url": "http://127.0.0.1:\(blackHole.port)/hook", "events": ["layout"]]))
        #expect(dead.status == 201)
        let live = try await client.send(
            "POST", "/v1/webhooks", headers: Self.json,
            body: jsonBody(["url": "http://127.0.0.1:\(receiver.port)/hook", "events": ["layout"]]))
        try receiver.use(secret: try #require(live.json?["secret"] as? String))
        let began = Date()
        for index in 0..<10 {
            let put = try await client.send(
                "PUT", "/v1/accounts/blackhole-\(index)/layout",
                headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]), body: document(["Home"]))
            #expect(put.status == 201)
        }
        let received = try await receiver.received(atLeast: 10, within: 8)
        let seconds = Date().timeIntervalSince(began)
        #expect(received.count == 10 && seconds < 5, "\(received.count) of 10 in \(seconds) s while the other receiver hangs")
    }

    @Test func goneDisablesTheWebhookAFailureIsRetriedAndARedirectIsNotFollowed() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let harness = try await ServiceHarness(webhookPolicy: .allowEverything)
        defer { harness.application.stop() }
        let client = harness.client()
        var ids: [String: String] = [:]
        for path in ["gone", "fail", "redirect"] {
            let made = try await client.send(
                "POST", "/v1/webhooks", headers: Self.json,
                body: jsonBody(["url": "http://127.0.0.1:\(receiver.port)/\(path)", "events": ["strings"]]))
            ids[path] = try #require(made.json?["id"] as? String)
        }
        let put = try await client.send(
            "PUT", "/v1/strings/de", headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "text/plain")]),
            body: Array("\"home\" = \"Start\";".utf8))
        #expect(put.status == 201)
        _ = try await receiver.received(atLeast: 3)
        try await Task.sleep(for: .milliseconds(300))
        #expect(
            try await receiver.received(atLeast: 4, within: 0.5).map { $0["path"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") } == [
                "/fail", "/gone", "/redirect",
            ])  // the 307 is an answer, not followed to /hook
        let redirected = try await client.send(
            "GET", "/v1/webhooks/\(try #require(ids["redirect"]))/deliveries", headers: ServiceHarness.admin())
        #expect((redirected.json?["deliveries"] as? [[String: Any]])?.first?["lastStatus"] as? Int == 307)
        let gone = try await client.send("GET", "/v1/webhooks/\(try #require(ids["gone"]))", headers: ServiceHarness.admin())
        #expect(gone.json?["active"] as? Bool == false)
        let failing = try await client.send("GET", "/v1/webhooks/\(try #require(ids["fail"]))/deliveries", headers: ServiceHarness.admin())
        let delivery = try #require((failing.json?["deliveries"] as? [[String: Any]])?.first)
        #expect(delivery["state"] as? String == "pending" && delivery["attempts"] as? Int == 1 && delivery["lastStatus"] as? Int == 500)
        #expect(delivery["nextAttemptAt"] is String)
    }

    @Test func deliveriesWrittenBeforeARestartAreSentAfterIt() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString).sqlite").path
        let before = try await ServiceHarness(store: try SQLiteStore(path: path), webhookPolicy: .allowEverything, webhookDeliveries: false)
        let made = try await before.client().send(
            "POST", "/v1/webhooks", headers: Self.json,
            body: jsonBody(["url": "http://127.0.0.1:\(receiver.port)/hook", "events": ["layout"]]))
        try receiver.use(secret: try #require(made.json?["secret"] as? String))
        let put = try await before.client().send(
            "PUT", "/v1/accounts/restarted/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]),
            body: document(["Home"]))
        #expect(put.status == 201)
        before.application.stop()
        #expect(try await receiver.received(atLeast: 1, within: 1.5).isEmpty)
        let after = try await ServiceHarness(store: try SQLiteStore(path: path), webhookPolicy: .allowEverything)
        defer { after.application.stop() }
        let received = try await receiver.received(atLeast: 1)
        #expect(received.count == 1 && received.first?["verified"] as? Bool == true)
    }

    /// The real binary: a write whose first attempt found no receiver, then SIGKILL, then a restart: the retry
    /// comes from the store's outbox and verifies.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ServerProcess.binary)))
    func aDeliveryPendingAtKill9IsSentAfterTheRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kill9-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = "sqlite:" + directory + "/tabs.sqlite"
        let environment = ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "TABSERVER_WEBHOOK_ALLOW_PRIVATE": "1"]
        let port = try WebhookReceiver.freePort()
        let first = try await ServerProcess.start(store: store, directory: directory, environment: environment)
        let client = HTTPTestClient(port: first.port)
        let made = try await client.send(
            "POST", "/v1/webhooks", headers: Self.json, body: jsonBody(["url": "http://127.0.0.1:\(port)/hook", "events": ["layout"]]))
        let id = try #require(made.json?["id"] as? String)
        let put = try await client.send(
            "PUT", "/v1/accounts/killed/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]),
            body: document(["Home"]))
        #expect(put.status == 201)
        var attempts = 0
        for _ in 0..<100 where attempts == 0 {
            try await Task.sleep(for: .milliseconds(50))
            let log = try await client.send("GET", "/v1/webhooks/\(id)/deliveries", headers: ServiceHarness.admin())
            attempts = (log.json?["deliveries"] as? [[String: Any]])?.first?["attempts"] as? Int ?? 0
        }
        #expect(attempts == 1)  // refused: nothing listened yet; the retry is due 5 s later
        first.kill9()
        let receiver = try WebhookReceiver(port: port)
        defer { receiver.stop() }
        try receiver.use(secret: try #require(made.json?["secret"] as? String))
        let second = try await ServerProcess.start(store: store, directory: directory, environment: environment)
        defer { second.kill9() }
        let received = try await receiver.received(atLeast: 1, within: 20)
        #expect(received.count == 1 && received.first?["verified"] as? Bool == true)
        #expect((received.first?["body"] as? String)?.contains(#""account":"killed""#) == true)
    }

    /// Two `tabserver serve` replicas on one PostgreSQL database: every delivery arrives once, whichever replica wrote it.
    @Test(.enabled(if: ReplicationTests.enabled))
    func twoReplicasOnPostgreSQLMakeEachAttemptOnce() async throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("replicas-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let database = try ReplicationTests.freshDatabase()
        let environment = ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "TABSERVER_WEBHOOK_ALLOW_PRIVATE": "1"]
        let first = try await ServerProcess.start(store: database, directory: directory, environment: environment)
        defer { first.kill9() }
        let second = try await ServerProcess.start(store: database, directory: directory, environment: environment)
        defer { second.kill9() }
        let made = try await HTTPTestClient(port: first.port).send(
            "POST", "/v1/webhooks", headers: Self.json,
            body: jsonBody(["url": "http://127.0.0.1:\(receiver.port)/hook", "events": ["layout"]]))
        try receiver.use(secret: try #require(made.json?["secret"] as? String))
        let writes = 30
        for n in 0..<writes {
            let put = try await HTTPTestClient(port: n % 2 == 0 ? first.port : second.port).send(
                "PUT", "/v1/accounts/replica\(n)/layout",
                headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]), body: document(["Home"]))
            #expect(put.status == 201)
        }
        _ = try await receiver.received(atLeast: writes, within: 20)
        let received = try await receiver.received(atLeast: writes + 1, within: 2)  // and nothing more comes
        #expect(received.count == writes)
        #expect(Set(received.compactMap { ($0["headers"] as? [String: String])?["webhook-id"] }).count == writes)
        #expect(received.allSatisfy { $0["verified"] as? Bool == true })
        var delivered = 0
        for port in [first.port, second.port] {
            let metrics = String(decoding: try await HTTPTestClient(port: port).send("GET", "/metrics").body, as: UTF8.self)
            let line = metrics.split(separator: "\n").first { $0.hasPrefix(#"tabserver_webhook_attempts_total{outcome="delivered"}"#) }
            delivered += Int(line?.split(separator: " ").last ?? "") ?? 0
        }
        #expect(delivered == writes)
    }

    /// HTTPS is checked against the system's CA store: a self-signed receiver gets no delivery, and the attempt
    /// records why.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func anHTTPSReceiverWithAnUntrustedCertificateIsNotDeliveredTo() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let make = Process()
        make.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        make.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "1",
        ]
        make.standardOutput = FileHandle.nullDevice
        make.standardError = FileHandle.nullDevice
        try make.run()
        while make.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        let port = try WebhookReceiver.freePort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        server.arguments = [
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", directory + "/cert.pem", "-key", directory + "/key.pem", "-www", "-quiet",
        ]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { kill(server.processIdentifier, SIGKILL) }
        try await Task.sleep(for: .milliseconds(300))
        let harness = try await ServiceHarness(webhookPolicy: .allowEverything)
        defer { harness.application.stop() }
        let client = harness.client()
        let made = try await client.send(
            "POST", "/v1/webhooks", headers: Self.json, body: jsonBody(["url": "https://127.0.0.1:\(port)/hook", "events": ["layout"]]))
        let id = try #require(made.json?["id"] as? String)
        _ = try await client.send(
            "PUT", "/v1/accounts/tls/layout",
            headers: ServiceHarness.admin([("If-None-Match", "*"), ("Content-Type", "application/json")]),
            body: document(["Home"]))
        var delivery: [String: Any]?
        for _ in 0..<100 where (delivery?["attempts"] as? Int ?? 0) == 0 {
            try await Task.sleep(for: .milliseconds(50))
            let log = try await client.send("GET", "/v1/webhooks/\(id)/deliveries", headers: ServiceHarness.admin())
            delivery = (log.json?["deliveries"] as? [[String: Any]])?.first
        }
        #expect(delivery?["state"] as? String == "pending" && delivery?["lastStatus"] is NSNull)
        #expect((delivery?["lastError"] as? String)?.contains("certificate") == true, "\(delivery?["lastError"] ?? "")")
    }
}
