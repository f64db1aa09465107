import Foundation
import MicroHTTPD
import TabServiceTestSupport
import TabTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Other clients' answer times while something abusive goes on (milliseconds).
func answerTimes(port: UInt16, count: Int) async throws -> [Double] {
    var times: [Double] = []
    for _ in 0..<count {
        let start = Date()
        let response = try await HTTPTestClient(port: port).send("GET", "/v1/accounts/jack/tabs")
        #expect(response.status == 200)
        times.append(Date().timeIntervalSince(start) * 1000)
        try await Task.sleep(for: .milliseconds(20))
    }
    return times.sorted()
}

/// Hostile connections: each is answered or cut off, and other clients keep getting answers within 100 ms.
/// The median of 20 answers is held to that; the 90th percentile to 500 ms and the slowest to 5 s, because the
/// whole test suite shares 2 cores with it and a connection whose SYN the loaded kernel drops waits 1–3 s.
func expectOthersAnswered(_ times: [Double], _ what: String) {
    #expect(times[times.count / 2] < 100, "\(what): median \(times[times.count / 2]) ms")
    #expect(times[times.count * 9 / 10] < 500, "\(what): 90th percentile \(times[times.count * 9 / 10]) ms")
    #expect(times.last! < 5000, "\(what): slowest \(times.last!) ms")
}

@Suite(.serialized) struct AbuseTests {
    @Test func slowHeadersDoNotDelayOthers() async throws {
        let harness = try await ServiceHarness()
        let slow = try (0..<20).map { _ in try RawConnection(port: harness.port) }
        let trickle = Task.detached {
            for byte in "GET /v1/accounts/jack/tabs HTTP/1.1\r\nHost: x\r\n" {
                for socket in slow { socket.write(String(byte)) }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        let times = try await answerTimes(port: harness.port, count: 20)
        trickle.cancel()
        expectOthersAnswered(times, "others")
    }

    @Test func slowBodiesDoNotDelayOthers() async throws {
        let harness = try await ServiceHarness()
        let slow = try (0..<20).map { _ in try RawConnection(port: harness.port) }
        for socket in slow {
            socket.write("PUT /v1/accounts/slow/layout HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(ServiceHarness.token)\r\n")
            socket.write("Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        }
        let trickle = Task.detached {
            for _ in 0..<30 {
                for socket in slow { socket.write(" ") }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        let times = try await answerTimes(port: harness.port, count: 20)
        trickle.cancel()
        expectOthersAnswered(times, "others")
    }

    @Test func aClientThatNeverReadsDoesNotBlockOthers() async throws {
        let harness = try await ServiceHarness()
        let greedy = try RawConnection(port: harness.port)
        var requests = ""
        for _ in 0..<2000 { requests += "GET /v1/accounts/jack/tabs HTTP/1.1\r\nHost: x\r\nAccept: application/x-plist\r\n\r\n" }
        let writer = Task.detached { greedy.write(requests) }  // may block once the buffers fill: nobody reads
        let times = try await answerTimes(port: harness.port, count: 20)
        writer.cancel()
        expectOthersAnswered(times, "others")
        shutdown(greedy.fd, Int32(SHUT_RDWR))
    }

    /// With deadlines of 1 s, a client trickling its headers, or its body, is cut off within about a second.
    @Test(arguments: ["headers", "body"])
    func aClientThatSendsTooSlowlyIsCutOff(part: String) async throws {
        let configuration = HTTPServerConfiguration(
            host: "127.0.0.1", port: 0, threads: 2, headerDeadlineSeconds: 1, bodyDeadlineSeconds: 1)
        let harness = try await ServiceHarness(configuration: configuration)
        let socket = try RawConnection(port: harness.port)
        if part == "body" {
            socket.write("PUT /v1/accounts/slow/layout HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(ServiceHarness.token)\r\n")
            socket.write("Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
        }
        let started = Date()
        let trickle = Task.detached {
            for _ in 0..<50 {
                if socket.write(part == "body" ? " " : "X") <= 0 { return }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        let answer = String(decoding: socket.readUntilClosed(seconds: 5).bytes, as: UTF8.self)
        let elapsed = Date().timeIntervalSince(started)
        trickle.cancel()
        #expect(answer.isEmpty, "cut off, not answered: \(answer.prefix(40))")
        #expect(elapsed < 3, "cut off after \(elapsed) s")
        #expect(try await HTTPTestClient(port: harness.port).send("GET", "/healthz").status == 200)
    }

    @Test func aHalfClosedClientStillGetsItsAnswer() async throws {
        let harness = try await ServiceHarness()
        let socket = try RawConnection(port: harness.port)
        socket.write("GET /v1/accounts/jack/tabs HTTP/1.1\r\nHost: x\r\n\r\n")
        socket.shutdownWrite()
        let answer = String(decoding: socket.readUntilClosed(seconds: 5).bytes, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        #expect(answer.contains("\"layout\":\"jack\""))
    }

    @Test func garbageIsRefusedAndTheServerStaysUp() async throws {
        let harness = try await ServiceHarness()
        for junk in [
            "\u{0}\u{1}\u{2}garbage\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET\r\n\r\n",
            "GET /healthz HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
        ] {
            let socket = try RawConnection(port: harness.port)
            socket.write(junk)
            socket.shutdownWrite()
            let answer = String(decoding: socket.readUntilClosed(seconds: 5).bytes, as: UTF8.self)
            // Refused (4xx, or 505 for an HTTP version it does not speak) or cut off; never a 2xx or a 5xx crash page.
            let refused = answer.isEmpty || ["HTTP/1.1 4", "HTTP/1.0 4", "HTTP/1.1 505"].contains { answer.hasPrefix($0) }
            #expect(refused, "\(junk.debugDescription) → \(answer.prefix(40))")
        }
        #expect(try await HTTPTestClient(port: harness.port).send("GET", "/healthz").status == 200)
    }

    /// 10,000 idle connections (the real binary, so that client and server sockets live in two processes).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: ServerProcess.binary)))
    func tenThousandIdleConnectionsDoNotLockOthersOut() async throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try #require(limit.rlim_max >= 10_500, "this machine allows \(limit.rlim_max) open files")
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let directory = NSTemporaryDirectory() + "idle-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // One client address may hold 1,024 connections by default: this test is about the total, so lift the share.
        let server = try await ServerProcess.start(
            store: "memory:", directory: directory, configs: true,
            environment: ["TABSERVER_ADMIN_TOKEN": ServiceHarness.token, "TABSERVER_PER_ADDRESS_CONNECTIONS": "20000"])
        defer { server.kill9() }
        var idle: [RawConnection] = []
        for _ in 0..<10_000 { idle.append(try RawConnection(port: server.port)) }
        let times = try await answerTimes(port: server.port, count: 20)
        expectOthersAnswered(times, "with \(idle.count) idle connections")
        idle.removeAll()
    }
}
