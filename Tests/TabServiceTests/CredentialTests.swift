import Foundation
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

    /// A wrong token of the right length takes as long to refuse whether it shares no leading character with
    /// the real one or all but the last (interleaved samples, medians compared; bounded to a few seconds).
    @Test func refusingAWrongTokenTakesTheSameTimeWhateverItsPrefix() {
        let real = Array(String(repeating: "k", count: 64).utf8)
        let farOff = Array(String(repeating: "z", count: 64).utf8)
        let nearly = Array((String(repeating: "k", count: 63) + "z").utf8)
        var far: [UInt64] = []
        var near: [UInt64] = []
        var sink = false
        for round in 0..<4000 {
            for candidate in round % 2 == 0 ? [farOff, nearly] : [nearly, farOff] {
                let start = nanoseconds()
                for _ in 0..<50 { sink = sink != constantTimeEqual(candidate, real) }
                let elapsed = nanoseconds() - start
                if candidate == farOff { far.append(elapsed) } else { near.append(elapsed) }
            }
        }
        let medianFar = Double(far.sorted()[far.count / 2])
        let medianNear = Double(near.sorted()[near.count / 2])
        #expect(!sink || sink)  // keeps the comparisons from being optimised away
        #expect(abs(medianFar - medianNear) / max(medianFar, medianNear) < 0.15, "far \(medianFar) ns, near \(medianNear) ns")
        #expect(constantTimeEqual(real, real) && !constantTimeEqual(real, nearly) && !constantTimeEqual(real, Array(real.prefix(63))))
    }
}
