import Foundation
import TabAccess
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.serialized) struct CredentialTests {
    /// The real binary with its log captured: no request, right token or wrong, puts a token in a log line
    /// or an answer.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ServerProcess.binary)))
    func noTokenEverAppearsInLogsOrErrorBodies() async throws {
        let token = "s3cret-\(UUID().uuidString)"
        let wrong = "wr0ng-\(UUID().uuidString)"
        let directory = NSTemporaryDirectory() + "tokens-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let tokensFile = directory + "/tokens"
        try "# operators\nops:\(token)\n".write(toFile: tokensFile, atomically: true, encoding: .utf8)
        let server = try await ServerProcess.start(
            store: "sqlite:\(directory)/t.sqlite", directory: directory, environment: ["TABSERVER_ADMIN_TOKENS_FILE": tokensFile])
        let port = server.port
        defer { server.kill9() }
        var answers: [HTTPTestClient.Response] = []
        for bearer in [token, wrong, "", token + "x"] {
            let headers = [("Authorization", "Bearer \(bearer)"), ("Content-Type", "application/json")]
            answers.append(
                try await HTTPTestClient(port: port).send("PUT", "/v1/accounts/a/layout", headers: headers, body: document(["A"])))
            answers.append(
                try await HTTPTestClient(port: port).send("PUT", "/v1/accounts/a/layout", headers: headers, body: Array("{bad".utf8)))
            answers.append(try await HTTPTestClient(port: port).send("GET", "/v1/accounts/a/layout/versions", headers: headers))
        }
        #expect(answers.first?.status == 201, "the right token writes")
        #expect(answers.contains { $0.status == 401 })
        for answer in answers {
            #expect(!answer.text.contains(token) && !answer.text.contains(wrong))
            #expect(!answer.headers.contains { $0.1.contains(token) || $0.1.contains(wrong) })
        }
        kill(server.process.processIdentifier, SIGTERM)
        server.process.waitUntilExit()
        let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
        #expect(log.contains("ops"), "the log names the token's owner")
        #expect(!log.contains(token) && !log.contains(wrong), "no token in the log")
    }

    /// Equal tokens match (TabAccess's comparison, which bootstrap tokens' hashes and API secrets go through) and
    /// nothing else does, whatever the lengths: lengths that differ by a multiple of 256
    /// (which an 8-bit length comparison would miss) and a token that is a prefix of another.
    @Test func tokensMatchOnlyWhenEqualWhateverTheirLengths() {
        let real = Array(String(repeating: "k", count: 64).utf8)
        #expect(ConstantTime.equal(real, real))
        #expect(!ConstantTime.equal(real, Array((String(repeating: "k", count: 63) + "z").utf8)))
        #expect(!ConstantTime.equal(real, Array(real.prefix(63))))
        #expect(!ConstantTime.equal([UInt8](repeating: 0, count: 256), []))
        #expect(!ConstantTime.equal([UInt8](repeating: 0, count: 300), [UInt8](repeating: 0, count: 44)))
        #expect(!ConstantTime.equal([], [UInt8](repeating: 0, count: 512)))
    }
}
