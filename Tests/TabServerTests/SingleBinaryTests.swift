import Foundation
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `tabserver` binary is the whole server: copied alone into an empty directory (as a package, an operator or a
/// `COPY --from` would), it serves the web console it carries; `TABSERVER_CONSOLE_DIR` still overrides it.
@Suite struct SingleBinaryTests {
    /// A copy of the built `tabserver`, alone in a temporary directory.
    final class LoneBinary: @unchecked Sendable {
        // Safety: set once in init; the process is only signalled and waited for after.
        let directory: URL
        let process: Process
        let port: UInt16
        private let log: Mutex

        final class Mutex: @unchecked Sendable {
            // Safety: every access to `text` holds `lock`.
            private let lock = NSLock()
            private var text = ""
            func append(_ more: String) { lock.withLock { text += more } }
            var value: String { lock.withLock { text } }
        }

        init(environment extra: [String: String] = [:]) async throws {
            let built = try builtExecutable("tabserver")
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("lone-tabserver-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let copy = directory.appendingPathComponent("tabserver")
            try FileManager.default.copyItem(at: built, to: copy)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["tabserver"])
            process = Process()
            process.executableURL = copy
            process.currentDirectoryURL = directory
            process.arguments = ["serve", "--store", "memory:", "--host", "127.0.0.1", "--port", "0", "--threads", "2"]
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TABSERVER_") }
            environment["TABSERVER_ADMIN_TOKEN"] = "lone-binary-test-token-0123"
            environment.merge(extra) { _, new in new }
            process.environment = environment
            let output = Pipe()
            process.standardError = output
            process.standardOutput = output
            let log = Mutex()
            self.log = log
            output.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                if data.isEmpty { handle.readabilityHandler = nil } else { log.append(String(decoding: data, as: UTF8.self)) }
            }
            try process.run()
            let started = Date()
            var found: UInt16?
            while found == nil, process.isRunning, Date().timeIntervalSince(started) < 30 {
                found = Self.port(in: log.value)
                if found == nil { try await Task.sleep(for: .milliseconds(20)) }
            }
            guard let found else {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                throw Failure("the copied tabserver did not report its port: \(log.value)")
            }
            port = found
        }

        var output: String { log.value }

        func stop() {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(at: directory)
        }

        deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        private static func port(in log: String) -> UInt16? {
            guard let range = log.range(of: " on 127.0.0.1:") else { return nil }
            return UInt16(log[range.upperBound...].prefix { $0.isNumber })
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// One GET on a connection of its own: status, headers (names lowercased) and body.
    static func get(_ port: UInt16, _ path: String, headers: String = "") throws -> (Int, [String: String], String) {
        let connection = try RawConnection(port: port)
        try connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\(headers)\r\n")
        let response = try connection.readResponse(seconds: 5)
        var fields: [String: String] = [:]
        for (name, value) in response.headers { fields[name.lowercased()] = value }
        return (response.status, fields, response.text)
    }

    @Test func aCopiedBinaryAloneServesItsConsole() async throws {
        let server = try await LoneBinary()
        defer { server.stop() }
        let (status, headers, html) = try Self.get(server.port, "/console/")
        #expect(status == 200, "\(server.output)")
        #expect(headers["content-type"] == "text/html; charset=utf-8")
        #expect(html.contains("<title>"))
        #expect(headers["cache-control"] == "no-cache")
        let etag = try #require(headers["etag"])
        #expect(try Self.get(server.port, "/console/", headers: "If-None-Match: \(etag)\r\n").0 == 304)

        // The page loads its script and style under hashed names, cached for a year; a hashed name's ETag is its
        // content's, and the plain name serves the same bytes revalidated.
        let script = try #require(html.firstMatch(of: /src="(app\.[0-9a-f]{10}\.js)"/)?.1)
        let style = try #require(html.firstMatch(of: /href="(console\.[0-9a-f]{10}\.css)"/)?.1)
        for name in [String(script), String(style)] {
            let (hashedStatus, hashedHeaders, body) = try Self.get(server.port, "/console/\(name)")
            #expect(hashedStatus == 200, "\(name)")
            #expect(hashedHeaders["cache-control"] == "public, max-age=31536000, immutable")
            #expect(!body.isEmpty)
        }
        let (_, _, app) = try Self.get(server.port, "/console/\(script)")
        #expect(app.firstMatch(of: /from "\.\/api\.[0-9a-f]{10}\.js"/) != nil, "the module's imports name hashed files too")
        #expect(!server.output.contains("the web console has no files"), "\(server.output)")
    }

    /// Every file of `Sources/TabConsole/Resources` is served under its name with the bytes the tree has now (its
    /// references to other files aside, which name their hashed forms): the build embedded the current files.
    @Test func theBinaryCarriesTheConsoleFilesAsTheTreeHasThem() async throws {
        let resources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/TabConsole/Resources")
        let names = try FileManager.default.contentsOfDirectory(atPath: resources.path).filter { !$0.hasPrefix(".") }.sorted()
        #expect(names.contains("index.html") && names.contains("app.js"))
        let server = try await LoneBinary()
        defer { server.stop() }
        for name in names {
            let (status, _, served) = try Self.get(server.port, "/console/\(name)")
            #expect(status == 200, "\(name)")
            let unhashed = served.replacing(/\.[0-9a-f]{10}\.(js|css)"/) { match in ".\(match.output.1)\"" }
            let onDisk = String(decoding: try Data(contentsOf: resources.appendingPathComponent(name)), as: UTF8.self)
            #expect(unhashed == onDisk, "\(name) as served differs from the tree beyond its hashed references")
        }
    }

    @Test func theConsoleDirectoryOverridesWhatTheBinaryCarries() async throws {
        let development = FileManager.default.temporaryDirectory.appendingPathComponent("console-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: development, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: development) }
        try Data("<!doctype html><title>development console</title>".utf8).write(to: development.appendingPathComponent("index.html"))
        let server = try await LoneBinary(environment: ["TABSERVER_CONSOLE_DIR": development.path])
        defer { server.stop() }
        let (status, _, html) = try Self.get(server.port, "/console/")
        #expect(status == 200)
        #expect(html == "<!doctype html><title>development console</title>")
        #expect(try Self.get(server.port, "/console/app.js").0 == 404, "only the directory's files")
    }
}
