import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `tabserver serve` on a store that does not answer: the process is alive for probes while it waits.
@Suite(.serialized) struct StartupProbeTests {
    /// Starts `serve` and returns once its start-up line names the port the probes answer on.
    static func startWaiting(store: String, directory: String) async throws -> (process: Process, port: UInt16, log: String) {
        let log = directory + "/serve.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServerProcess.binary)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--store", store, "--threads", "2"]
        process.environment = ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        for _ in 0..<400 {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"at 127\.0\.0\.1 port (\d+) until"#, options: .regularExpression),
                let port = UInt16(text[range].dropFirst("at 127.0.0.1 port ".count).prefix { $0.isNumber })
            {
                return (process, port, log)
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        process.terminate()
        throw HTTPTestClient.Failure(
            description: "serve wrote no start-up line: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ServerProcess.binary)))
    func probesAnswerWhileTheStoreDoesNotAndTheServiceOnceItDoes() async throws {
        let directory = NSTemporaryDirectory() + "startup-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The store's directory's parent does not exist yet: opening fails until it does.
        let missing = directory + "/not-yet"
        let (process, port, _) = try await Self.startWaiting(store: "sqlite:\(missing)/data/tabs.sqlite", directory: directory)
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let client = HTTPTestClient(port: port)
        try await Task.sleep(for: .milliseconds(800))  // a failed attempt or two
        let health = try await client.send("GET", "/healthz")
        #expect(health.status == 200)
        let ready = try await client.send("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.header("Content-Type") == "application/problem+json")
        let detail = ready.json?["detail"] as? String ?? ""
        #expect(detail.contains("the store sqlite:\(missing)/data/tabs.sqlite does not answer"), "\(detail)")
        let read = try await client.send("GET", "/v1/accounts/jack/tabs")
        #expect(read.status == 503 && read.header("Retry-After") != nil)
        #expect(process.isRunning)

        try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
        let deadline = Date().addingTimeInterval(20)
        var status = 503
        while Date() < deadline {
            status = (try? await client.send("GET", "/readyz").status) ?? 0
            if status == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(status == 200, "the service took over the port once the store answered")
        #expect(try await client.send("GET", "/v1/accounts/jack/tabs").status == 404, "the service itself answers (no layout yet)")
    }
}
