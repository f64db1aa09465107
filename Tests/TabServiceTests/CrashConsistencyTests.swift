import Foundation
import TabServiceTestSupport
import TabStore
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real `tabserver serve` process on SQLite, killed with SIGKILL in the middle of writes.
struct ServerProcess {
    static let binary = ServiceHarness.repository.appendingPathComponent(".build/debug/tabserver").path
    let process: Process
    let port: UInt16
    let logPath: String

    /// Starts `tabserver serve` on port 0 and reads the port it bound from its log line (a port picked
    /// beforehand can be taken by another test's client sockets before the server binds it).
    static func start(
        store: String, directory: String, configs: Bool = false,
        environment: [String: String] = ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token]
    ) async throws -> ServerProcess {
        let logPath = directory + "/server-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments =
            ["serve", "--host", "127.0.0.1", "--port", "0", "--store", store, "--threads", "2"]
            + (configs ? ["--configs", ServiceHarness.repository.appendingPathComponent("configs").path] : [])
        process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { $1 }
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        for _ in 0..<400 {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let range = log.range(of: #"on 127\.0\.0\.1:(\d+) with"#, options: .regularExpression) {
                let digits = log[range].dropFirst("on 127.0.0.1:".count).prefix { $0.isNumber }
                if let port = UInt16(digits), (try? await HTTPTestClient(port: port).send("GET", "/healthz").status) == 200 {
                    return ServerProcess(process: process, port: port, logPath: logPath)
                }
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        process.terminate()
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw HTTPTestClient.Failure(description: "tabserver did not come up: \(log.suffix(400))")
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

@Suite(.serialized) struct CrashConsistencyTests {
    struct Acknowledged: Sendable {
        var account: String
        var version: Int
        var etag: String
        var body: [UInt8]
    }

    /// Writers on four accounts, SIGKILL at a random moment while they write, restart: twenty times over one
    /// store. After each kill the SQLite file passes `PRAGMA integrity_check`, and after each restart every
    /// version ever acknowledged is present and identical, with versions contiguous from 1.
    /// The slowest test of the suite (over 20 s: 102 s with the load average at 13 on two cores) and meant to be: each
    /// cycle starts a tabserver process, writes until the kill and checks the whole file; fewer cycles find fewer
    /// torn writes.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ServerProcess.binary)))
    func everyAcknowledgedWriteSurvivesTwentyKill9Cycles() async throws {
        let directory = NSTemporaryDirectory() + "kill9-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/tabs.sqlite"
        var acknowledged: [String: Acknowledged] = [:]  // "account/version" → what the server acknowledged
        var total = 0
        for cycle in 0..<20 {
            let server = try await ServerProcess.start(store: "sqlite:\(path)", directory: directory)
            let killAfter = Int.random(in: 50...400)
            let written = try await withThrowingTaskGroup(of: [Acknowledged].self) { group in
                for writer in 0..<4 {
                    group.addTask { await Self.writeUntilKilled(port: server.port, account: "crash-\(writer)", cycle: cycle) }
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(killAfter))
                    server.kill9()
                    return []
                }
                return try await group.reduce(into: [Acknowledged]()) { $0 += $1 }
            }
            total += written.count
            for ack in written { acknowledged["\(ack.account)/\(ack.version)"] = ack }
            #expect(try SQLiteStore(path: path).integrityCheck(), "integrity check after kill \(cycle + 1)")
            let restarted = try await ServerProcess.start(store: "sqlite:\(path)", directory: directory)
            do {
                try await Self.expectAllPresent(acknowledged.values, port: restarted.port)
            } catch {
                let log = (try? String(contentsOfFile: restarted.logPath, encoding: .utf8)) ?? ""
                Issue.record("cycle \(cycle): \(error); server alive: \(restarted.process.isRunning); log: \(log.suffix(600))")
            }
            restarted.kill9()
        }
        #expect(total > 20, "writes were acknowledged across the cycles (\(total))")
    }

    /// PUTs with If-Match (the server's current ETag) until the server goes away.
    static func writeUntilKilled(port: UInt16, account: String, cycle: Int) async -> [Acknowledged] {
        let client = HTTPTestClient(port: port)
        var done: [Acknowledged] = []
        var etag = (try? await client.send("GET", "/v1/accounts/\(account)/layout", headers: ServiceHarness.admin()))
            .flatMap { $0.status == 200 ? $0.header("ETag") : nil }
        for i in 0..<10_000 {
            let body = document(["cycle \(cycle) write \(i)"])
            var headers = ServiceHarness.admin([("Content-Type", "application/json")])
            if let etag { headers.append(("If-Match", etag)) }
            guard let response = try? await client.send("PUT", "/v1/accounts/\(account)/layout", headers: headers, body: body),
                response.status == 200 || response.status == 201, let tag = response.header("ETag"),
                let version = Int(response.header("Layout-Version") ?? "")
            else { break }
            etag = tag
            done.append(Acknowledged(account: account, version: version, etag: tag, body: body))
        }
        return done
    }

    static func expectAllPresent(_ acknowledged: some Collection<Acknowledged>, port: UInt16) async throws {
        let client = HTTPTestClient(port: port)
        for account in Set(acknowledged.map(\.account)) {
            // Every page of the history, newest first (`next` is the version to continue before).
            var numbers: [Int] = []
            var before: Int?
            repeat {
                let page: HTTPTestClient.Response
                let query = "limit=1000" + (before.map { "&before=\($0)" } ?? "")
                do {
                    page = try await client.send("GET", "/v1/accounts/\(account)/layout/versions?\(query)", headers: ServiceHarness.admin())
                } catch {
                    throw HTTPTestClient.Failure(description: "GET versions of \(account): \(error)")
                }
                numbers += (page.json?["versions"] as? [[String: Any]] ?? []).compactMap { $0["version"] as? Int }
                before = page.json?["next"] as? Int
            } while before != nil
            #expect(numbers == Array((1...max(1, numbers.first ?? 0)).reversed()), "versions of \(account) are contiguous")
            for ack in acknowledged where ack.account == account {
                let stored: HTTPTestClient.Response
                do {
                    stored = try await client.send(
                        "GET", "/v1/accounts/\(account)/layout/versions/\(ack.version)", headers: ServiceHarness.admin())
                } catch {
                    throw HTTPTestClient.Failure(description: "GET \(account) v\(ack.version): \(error)")
                }
                #expect(stored.status == 200 && stored.body == ack.body && stored.header("ETag") == ack.etag, "\(account) v\(ack.version)")
            }
        }
    }
}
