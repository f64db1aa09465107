import Foundation
import TabServiceTestSupport
import TabTestSupport
import Testing

@testable import TabService

/// Held long-polls keep their deadlines though nothing on the server wakes on a period: the slow-client watchdog
/// sleeps while every connection is answering (a held poll is), and the deadlines are swept only while polls wait.
@Suite struct HeldTimeoutLiveTests {
    /// A poll held on an otherwise idle server answers 304 at its `wait`, not before and not a sweep period late,
    /// twice on one kept-alive connection (the second deadline starts the sweeper again after it stopped).
    @Test func aHeldPollOnAnIdleServerAnswersAtItsWait() async throws {
        let harness = try await ServiceHarness()
        defer { harness.application.stop() }
        let client = harness.client()
        let etag = try #require(try await client.send("GET", "/v1/accounts/jack/tabs").header("ETag"))
        try await Task.sleep(for: .milliseconds(300))  // nothing held: the sweeper of deadlines has stopped
        for seconds in [1, 2] {
            let started = ContinuousClock.now
            let polled = try await client.send("GET", "/v1/accounts/jack/tabs?wait=\(seconds)", headers: [("If-None-Match", etag)])
            let took = ContinuousClock.now - started
            #expect(polled.status == 304)
            #expect(took >= .seconds(seconds) && took < .seconds(seconds) + .milliseconds(600), "wait=\(seconds) took \(took)")
            #expect(harness.service.publisher.waiters.held == 0)
        }
    }
}
