import Foundation
import TabTestSupport
import Testing

@testable import MicroHTTPD

/// HTTPS through libmicrohttpd's GnuTLS: TLS 1.2 and 1.3 with curl against a CA made here with the openssl CLI,
/// and a certificate reload that keeps open connections while new ones get the new certificate.
@Suite struct TLSTests {
    /// A CA and a server certificate for 127.0.0.1 signed by it, made with the `openssl` CLI in a temporary directory.
    struct Authority {
        let directory: URL
        let name: String
        var caFile: String { directory.appendingPathComponent("\(name)-ca.pem").path }
        var certificate: [UInt8] {
            Array(FileManager.default.contents(atPath: directory.appendingPathComponent("\(name)-cert.pem").path) ?? Data())
        }
        var privateKey: [UInt8] {
            Array(FileManager.default.contents(atPath: directory.appendingPathComponent("\(name)-key.pem").path) ?? Data())
        }

        init(_ name: String, in directory: URL) throws {
            self.directory = directory
            self.name = name
            let path = { (file: String) in directory.appendingPathComponent("\(name)-\(file)").path }
            try "subjectAltName=IP:127.0.0.1\n".write(toFile: path("ext.cnf"), atomically: true, encoding: .utf8)
            let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
            try run(
                "/usr/bin/openssl",
                ["req", "-x509"] + ec + [
                    "-keyout", path("ca-key.pem"), "-out", path("ca.pem"), "-days", "1", "-subj", "/CN=\(name) test CA",
                ])
            try run("/usr/bin/openssl", ["req"] + ec + ["-keyout", path("key.pem"), "-out", path("csr.pem"), "-subj", "/CN=127.0.0.1"])
            try run(
                "/usr/bin/openssl",
                [
                    "x509", "-req", "-in", path("csr.pem"), "-CA", path("ca.pem"), "-CAkey", path("ca-key.pem"), "-CAcreateserial", "-out",
                    path("cert.pem"), "-days", "1", "-extfile", path("ext.cnf"),
                ])
        }
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs a command to its end (at most 20 s); returns its exit status and standard error.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], check: Bool = true) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        // Read while it runs (a full pipe would stall it), then wait with a deadline.
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let result = (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        if check && result.0 != 0 { throw CommandFailed(description: "\(executable) \(arguments.joined(separator: " ")): \(result.2)") }
        return result
    }

    func run(_ executable: String, _ arguments: [String]) throws { try Self.run(executable, arguments) }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mhd-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// curl over HTTPS with `options` (on a thread of its own); returns exit status, body and the TLS version
    /// curl reported.
    static func curl(_ port: UInt16, ca: String, _ options: [String], path: String = "/x") async throws -> (
        status: Int32, body: String, tls: String?
    ) {
        let arguments = ["-sS", "-v", "--max-time", "5", "--cacert", ca] + options + ["https://127.0.0.1:\(port)\(path)"]
        let result = try await offPool { try run("/usr/bin/curl", arguments, check: false) }
        let version = result.stderr.split(separator: "\n").first { $0.contains("SSL connection using") }.flatMap { line in
            line.split(separator: " ").first { $0.hasPrefix("TLSv") }.map(String.init)
        }
        return (result.status, result.stdout, version)
    }

    @Test func servesTLS12AndTLS13() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try Authority("first", in: directory)
        let (server, _) = try startServer {
            $0.tlsCertificate = authority.certificate
            $0.tlsPrivateKey = authority.privateKey
        }
        defer { server.stop() }
        let tls12 = try await Self.curl(server.port, ca: authority.caFile, ["--tlsv1.2", "--tls-max", "1.2"])
        #expect(tls12.status == 0 && tls12.body == "GET /x body=0 accept=*/*" && tls12.tls == "TLSv1.2")
        let tls13 = try await Self.curl(server.port, ca: authority.caFile, ["--tlsv1.3"])
        #expect(tls13.status == 0 && tls13.body == "GET /x body=0 accept=*/*" && tls13.tls == "TLSv1.3")
        let plain = try await offPool {
            try Self.run("/usr/bin/curl", ["-sS", "--max-time", "3", "http://127.0.0.1:\(server.port)/x"], check: false)
        }
        #expect(plain.status != 0 || !plain.stdout.contains("body=0"), "plain HTTP is not served on the HTTPS port")
    }

    /// TLS 1.1 and 1.0 are refused: the same s_client, allowed to offer them (security level 0), gets no
    /// certificate, while it completes a verified TLS 1.2 handshake.
    @Test func refusesTLS11AndTLS10() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try Authority("first", in: directory)
        let (server, _) = try startServer {
            $0.tlsCertificate = authority.certificate
            $0.tlsPrivateKey = authority.privateKey
        }
        defer { server.stop() }
        func handshake(_ options: [String]) async throws -> String {
            let arguments = ["s_client", "-connect", "127.0.0.1:\(server.port)", "-CAfile", authority.caFile] + options
            let result = try await offPool { try Self.run("/usr/bin/openssl", arguments, check: false) }
            return result.stdout + result.stderr
        }
        let legacy = ["-cipher", "DEFAULT:@SECLEVEL=0"]
        #expect(try await handshake(["-tls1_1"] + legacy).contains("no peer certificate available"))
        #expect(try await handshake(["-tls1"] + legacy).contains("no peer certificate available"))
        #expect(try await handshake(["-tls1_2"] + legacy).contains("Verify return code: 0 (ok)"))
    }

    @Test func refusesHalfAConfigurationAndAnUnreadableCertificate() throws {
        #expect(throws: MicroHTTPDError.tlsIncomplete) {
            _ = try startServer { $0.tlsCertificate = Array("x".utf8) }
        }
        #expect(throws: MicroHTTPDError.self) {
            _ = try startServer {
                $0.tlsCertificate = Array("not a certificate".utf8)
                $0.tlsPrivateKey = Array("not a key".utf8)
            }
        }
        let (plain, _) = try startServer()
        defer { plain.stop() }
        #expect(throws: MicroHTTPDError.notServingTLS) { try plain.reloadCertificate([], privateKey: []) }
    }

    /// A keep-alive connection opened before the reload keeps working on the old certificate; new connections
    /// get the new one (only the new CA verifies them); a bad new certificate leaves the current one in service.
    @Test func reloadKeepsOpenConnectionsAndServesTheNewCertificate() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Authority("first", in: directory)
        let second = try Authority("second", in: directory)
        let (server, _) = try startServer {
            $0.tlsCertificate = first.certificate
            $0.tlsPrivateKey = first.privateKey
        }
        defer { server.stop() }

        let client = try TLSClient(port: server.port, caFile: first.caFile)
        defer { client.close() }
        #expect(try await client.get("/before").text == "GET /before body=0 accept=-")

        let started = Date()
        try server.reloadCertificate(second.certificate, privateKey: second.privateKey)
        let reloadSeconds = Date().timeIntervalSince(started)
        #expect(reloadSeconds < 1, "reload took \(reloadSeconds) s")

        #expect(try await client.get("/after").text == "GET /after body=0 accept=-", "the open connection was not dropped")
        #expect(try await Self.curl(server.port, ca: second.caFile, ["--tlsv1.3"]).status == 0, "new connections get the new certificate")
        #expect(try await Self.curl(server.port, ca: first.caFile, ["--tlsv1.3"]).status != 0, "and no longer the old one")

        #expect(throws: MicroHTTPDError.self) { try server.reloadCertificate(Array("junk".utf8), privateKey: Array("junk".utf8)) }
        #expect(
            try await Self.curl(server.port, ca: second.caFile, ["--tlsv1.2", "--tls-max", "1.2"]).status == 0,
            "still serving after a bad reload"
        )
        #expect(try await client.get("/still").text == "GET /still body=0 accept=-")
        #expect(server.drainingDaemons == 1, "the first daemon drains while its connection is open")
        client.close()
        #expect(try await eventually(seconds: 3) { server.drainingDaemons == 0 }, "and is stopped once it closed")
    }
}

/// HTTPS behind a PROXY protocol header (curl's `--haproxy-protocol` writes a version 1 one), and a certificate
/// reload there: the server's own listener hands new connections to the new daemon.
@Suite struct TLSBehindProxyProtocolTests {
    @Test func servesHTTPSAfterTheHeaderAndReloadsTheCertificate() async throws {
        let directory = try TLSTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try TLSTests.Authority("first", in: directory)
        let second = try TLSTests.Authority("second", in: directory)
        let settings = try ProxyProtocolSettings(trustedPeers: ["127.0.0.1"])
        let (server, _) = try startServer {
            $0.tlsCertificate = first.certificate
            $0.tlsPrivateKey = first.privateKey
            $0.proxyProtocol = settings
        }
        defer { server.stop() }
        let proxied = try await TLSTests.curl(server.port, ca: first.caFile, ["--haproxy-protocol"])
        #expect(proxied.status == 0 && proxied.body == "GET /x body=0 accept=*/*")
        #expect(try await TLSTests.curl(server.port, ca: first.caFile, []).status != 0, "no header: closed")

        try server.reloadCertificate(second.certificate, privateKey: second.privateKey)
        let reloaded = try await TLSTests.curl(server.port, ca: second.caFile, ["--haproxy-protocol"])
        #expect(reloaded.status == 0 && reloaded.body == "GET /x body=0 accept=*/*", "new connections get the new certificate")
        #expect(try await TLSTests.curl(server.port, ca: first.caFile, ["--haproxy-protocol"]).status != 0, "and no longer the old one")
        #expect(try await eventually(seconds: 3) { server.drainingDaemons == 0 }, "the first daemon, with no connection, is stopped")
    }
}

/// One TLS connection held open by `openssl s_client`, to send requests on it at will. Safety
/// (`@unchecked Sendable`): one test uses it from one task at a time.
final class TLSClient: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    private var buffered: [UInt8] = []

    init(port: UInt16, caFile: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", caFile, "-verify_return_error", "-quiet"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Sends a GET on the held connection and reads its response (5 s deadline), on a thread of its own.
    func get(_ path: String) async throws -> RawResponse { try await offPool { try self.getBlocking(path) } }

    private func getBlocking(_ path: String) throws -> RawResponse {
        input.fileHandleForWriting.write(Data("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        let fd = output.fileHandleForReading.fileDescriptor
        let deadline = now() + 5
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let (response, used) = RawResponse.parse(buffered, head: false) {
                buffered.removeFirst(used)
                return response
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = deadline - now()
            guard left > 0, poll(&descriptor, 1, Int32(left * 1000)) > 0 else {
                throw RawConnection.Failure(description: "no TLS response within 5 s")
            }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw RawConnection.Failure(description: "s_client ended: the connection was dropped") }
            buffered.append(contentsOf: chunk[..<count])
        }
    }

    /// Ends s_client (SIGKILL: with `-quiet` it ignores end of input, and SIGTERM was measured to take 30 s here).
    func close() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
