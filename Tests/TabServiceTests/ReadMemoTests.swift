import Foundation
import MicroHTTPD
import Synchronization
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

/// The read memo (docs/performance.md): an answer is given again only to the same bytes, at the same snapshot and cache
/// generation, on the thread that remembered it; and over a real socket, what apps see is what they saw without it.
@Suite struct ReadMemoTests {
    private static func answer(_ body: String = "{}") throws -> ReadMemo.Answer {
        let representation = try Representation(
            body: Array(body.utf8), contentType: "application/json", locale: nil, vary: "Accept", lastModifiedSeconds: 0,
            ambiguous: false, cacheControl: "no-cache")
        return ReadMemo.Answer(response: representation.identity.ok, representation: representation, slot: 3)
    }

    private static func withBytes<R>(_ text: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        Array(text.utf8).withUnsafeBytes(body)
    }

    @Test func anAnswerHoldsForItsBytesSequenceAndGenerationOnly() throws {
        let memo = ReadMemo()
        let stored = try Self.answer()
        Self.withBytes("GET /v1/accounts/jack/tabs If-None-Match: \"a\"") {
            memo.remember(identity: $0, sequence: 7, generation: 2, answer: stored)
        }
        Self.withBytes("GET /v1/accounts/jack/tabs If-None-Match: \"a\"") { identity in
            #expect(memo.answer(identity: identity, sequence: 7, generation: 2)?.response === stored.response)
            #expect(memo.answer(identity: identity, sequence: 8, generation: 2) == nil, "a later snapshot")
            #expect(memo.answer(identity: identity, sequence: 7, generation: 3) == nil, "a sweep since")
            #expect(ReadMemo().answer(identity: identity, sequence: 7, generation: 2) == nil, "another service's memo")
        }
        for other in ["GET /v1/accounts/jack/tabs If-None-Match: \"b\"", "GET /v1/accounts/jack/tabs If-None-Match: \"a\" ", ""] {
            Self.withBytes(other) { #expect(memo.answer(identity: $0, sequence: 7, generation: 2) == nil, "\(other)") }
        }
    }

    @Test func eachThreadKeepsItsOwnAnswers() throws {
        // Synchronous: an `await` could resume this test on another thread of the pool.
        let memo = ReadMemo()
        let stored = try Self.answer()
        Self.withBytes("HEAD /v1/accounts/jack/tabs") { memo.remember(identity: $0, sequence: 1, generation: 0, answer: stored) }
        let found = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let answer = Self.withBytes("HEAD /v1/accounts/jack/tabs") { memo.answer(identity: $0, sequence: 1, generation: 0) }
            found.withLock { $0 = answer != nil }
            done.signal()
        }.start()
        done.wait()
        #expect(found.withLock { $0 } == false, "another thread has a table of its own")
        Self.withBytes("HEAD /v1/accounts/jack/tabs") {
            #expect(memo.answer(identity: $0, sequence: 1, generation: 0)?.response === stored.response)
        }
    }

    @Test func aLongerIdentityIsNotRemembered() throws {
        let memo = ReadMemo()
        let long = String(repeating: "x", count: ReadMemo.maxIdentityBytes + 1)
        Self.withBytes(long) { identity in
            memo.remember(identity: identity, sequence: 1, generation: 0, answer: try! Self.answer())
            #expect(memo.answer(identity: identity, sequence: 1, generation: 0) == nil)
        }
    }

    @Test func aLookupAtALaterSnapshotLetsGoOfTheEarlierAnswer() throws {
        let memo = ReadMemo()
        weak var held: Representation?
        do {
            let stored = try Self.answer()
            held = stored.representation
            Self.withBytes("GET /v1/accounts/jack/tabs") { memo.remember(identity: $0, sequence: 1, generation: 0, answer: stored) }
        }
        #expect(held != nil, "the slot holds the answer")
        Self.withBytes("GET /v1/accounts/jack/tabs") { #expect(memo.answer(identity: $0, sequence: 2, generation: 0) == nil) }
        #expect(held == nil, "a stale slot lets go of its representation")
    }

    @Test func aLargeRepresentationIsNotRemembered() throws {
        let memo = ReadMemo()
        var generator = SystemRandomNumberGenerator()
        let body = (0..<(ReadMemo.maxRepresentationCost)).map { _ in UInt8.random(in: 0x61...0x7A, using: &generator) }
        let large = try Self.answer(String(decoding: body, as: UTF8.self))
        #expect(large.representation.cost > ReadMemo.maxRepresentationCost)
        Self.withBytes("GET /v1/accounts/large/tabs") { identity in
            memo.remember(identity: identity, sequence: 1, generation: 0, answer: large)
            #expect(memo.answer(identity: identity, sequence: 1, generation: 0) == nil)
        }
    }

    @Test func theHashSpreadsNearlyEqualIdentities() {
        var seen: Set<UInt64> = []
        for index in 0..<1000 {
            Self.withBytes("GET /v1/accounts/account\(index)/tabs") {
                _ = seen.insert(ReadMemo.hash($0) & UInt64(ReadMemo.slotsPerThread - 1))
            }
        }
        #expect(seen.count > ReadMemo.slotsPerThread * 9 / 10, "1,000 accounts use most slots")
    }

    // MARK: Over a socket

    private static let iOS: [(String, String)] = [
        ("Accept", "*/*"), ("Accept-Language", "fr-FR,fr;q=0.9,en;q=0.8"), ("Accept-Encoding", "gzip, deflate, br"),
        ("User-Agent", "Tabs/4.2 CFNetwork/1498.700.2 Darwin/23.6.0"),
    ]

    /// Sends `request` `times` times on one keep-alive connection (one libmicrohttpd thread, one table).
    private static func exchange(_ connection: RawConnection, _ request: String, times: Int = 1) async throws -> [RawResponse] {
        var responses: [RawResponse] = []
        for _ in 0..<times {
            try connection.send(request)
            responses.append(try await connection.response())
        }
        return responses
    }

    private static func get(_ path: String, _ headers: [(String, String)]) -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n"
    }

    /// Asks for `path` as an iOS app does until its brotli form is made, and returns the app's revalidation of it.
    /// The first answers make the gzip form, then the brotli form: an answer is remembered only once every form
    /// exists, so the memo never keeps a client on gzip after brotli lands.
    private static func revalidation(_ connection: RawConnection, _ path: String, _ headers: [(String, String)] = []) async throws
        -> (request: String, tag: String)
    {
        var warm = try await exchange(connection, get(path, iOS + headers))[0]
        let deadline = Date().addingTimeInterval(10)
        while warm.header("Content-Encoding") != "br" && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
            warm = try await exchange(connection, get(path, iOS + headers))[0]
        }
        #expect(warm.header("Content-Encoding") == "br", "the brotli form is made in the background")
        let tag = try #require(warm.header("ETag"))
        return (get(path, iOS + headers + [("If-None-Match", tag)]), tag)
    }

    @Test func repeatedRevalidationsAreAnsweredFromTheMemoWithTheSameBytes() async throws {
        let harness = try await ServiceHarness()
        let connection = try RawConnection(port: harness.port)
        let (revalidation, tag) = try await Self.revalidation(connection, "/v1/accounts/jack/tabs")
        let before = harness.service.metrics.memoHits.load(ordering: .relaxed)
        let answers = try await Self.exchange(connection, revalidation, times: 5)
        #expect(answers.allSatisfy { $0.status == 304 && $0.header("ETag") == tag && $0.body.isEmpty })
        #expect(harness.service.metrics.memoHits.load(ordering: .relaxed) - before >= 4, "the second and later from the memo")
        // Bytes on the wire, Date aside, are those of the first.
        let heads = answers.map { $0.headers.filter { $0.name.lowercased() != "date" }.map { "\($0.name): \($0.value)" } }
        #expect(Set(heads.map { $0.joined(separator: "\n") }).count == 1)
        let metrics = try await harness.client().send("GET", "/metrics")
        #expect(String(decoding: metrics.body, as: UTF8.self).contains("tabserver_read_memo_hits_total "))
    }

    @Test func aWriteEndsTheMemoBeforeTheWriterHearsBack() async throws {
        let harness = try await ServiceHarness()
        let client = harness.client()
        let created = try await client.send(
            "PUT", "/v1/accounts/memo/layout", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: document(["One"]))
        #expect(created.status == 201)
        let connection = try RawConnection(port: harness.port)
        let first = try await Self.exchange(connection, Self.get("/v1/accounts/memo/tabs", [("Accept-Encoding", "identity")]), times: 3)
        let tag = try #require(first.last?.header("ETag"))
        let revalidation = Self.get("/v1/accounts/memo/tabs", [("Accept-Encoding", "identity"), ("If-None-Match", tag)])
        let held = try await Self.exchange(connection, revalidation, times: 3)
        #expect(held.allSatisfy { $0.status == 304 })
        let version = try #require(created.header("ETag"))
        for round in 0..<5 {
            let changed = try await client.send(
                "PUT", "/v1/accounts/memo/layout",
                headers: ServiceHarness.admin([("Content-Type", "application/json"), ("If-Match", round == 0 ? version : "*")]),
                body: document(["Round \(round)"]))
            #expect(changed.status == 200)
            // Right after the writer's answer, the same bytes get the new layout.
            let after = try await Self.exchange(connection, Self.get("/v1/accounts/memo/tabs", [("Accept-Encoding", "identity")]))
            #expect(after[0].status == 200)
            #expect(String(decoding: after[0].body, as: UTF8.self).contains("Round \(round)"))
            let stale = try await Self.exchange(connection, revalidation)
            #expect(stale[0].status == 200, "the old tag is no longer current")
        }
    }

    @Test func aScheduledRolloutReachesInstallsThatWereAnsweredTheSameBytesBefore() async throws {
        let harness = try await ServiceHarness()
        let etag = try await RolloutLiveTests.staged(harness, account: "later")
        let startAt = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        let started = try await RolloutLiveTests.startRollout(
            harness, #"{"version": 2, "percent": 100, "startAt": "\#(startAt)"}"#, etag: etag, account: "later")
        try #require(started.status == 201, "\(started.text)")
        let connection = try RawConnection(port: harness.port)
        let request = Self.get("/v1/accounts/later/tabs", [("Accept-Encoding", "identity"), ("X-Install-Id", "install-1")])
        let before = try await Self.exchange(connection, request, times: 3)
        #expect(before.allSatisfy { $0.status == 200 && String(decoding: $0.body, as: UTF8.self).contains("\"version\":1") })
        try await Task.sleep(for: .milliseconds(2600))
        let after = try await Self.exchange(connection, request, times: 2)
        #expect(after.allSatisfy { String(decoding: $0.body, as: UTF8.self).contains("\"version\":2") })
    }

    @Test func aRolloutTurnsTheMemoOffForItsAccountOnly() async throws {
        let harness = try await ServiceHarness()
        let etag = try await RolloutLiveTests.staged(harness, account: "rolling")
        let started = try await RolloutLiveTests.startRollout(harness, #"{"version": 2, "percent": 50}"#, etag: etag, account: "rolling")
        try #require(started.status == 201, "\(started.text)")
        let connection = try RawConnection(port: harness.port)
        let hits = { harness.service.metrics.memoHits.load(ordering: .relaxed) }

        // The account in a rollout: each answer is chosen again (its arm depends on the install and the time).
        let rolling = try await Self.revalidation(connection, "/v1/accounts/rolling/tabs", [("X-Install-Id", "install-1")])
        var before = hits()
        let rollingAnswers = try await Self.exchange(connection, rolling.request, times: 5)
        #expect(rollingAnswers.allSatisfy { $0.status == 304 && $0.header("ETag") == rolling.tag })
        #expect(hits() == before, "no answer of the rolling account from the memo")

        // Another account, same snapshot: remembered as before.
        let steady = try await Self.revalidation(connection, "/v1/accounts/jack/tabs", [("X-Install-Id", "install-1")])
        before = hits()
        let steadyAnswers = try await Self.exchange(connection, steady.request, times: 5)
        #expect(steadyAnswers.allSatisfy { $0.status == 304 && $0.header("ETag") == steady.tag })
        #expect(hits() - before >= 4, "the second and later from the memo")
    }
}
