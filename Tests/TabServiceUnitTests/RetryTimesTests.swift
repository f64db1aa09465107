import Testing

@testable import TabService

/// The outbox sleeps until the next retry its worker scheduled, and at most its poll interval.
@Suite struct RetryTimesTests {
    @Test(
        arguments: [
            ([], 1_000, 5_000),  // nothing scheduled: the poll interval
            ([6_000], 1_000, 5_000),  // the retry after the interval: the interval
            ([3_000], 1_000, 2_000),  // the retry before it: until the retry
            ([1_000, 2_500], 1_000, 1_500),  // one due now (claimed by the look): the next one
            ([900, 1_000], 1_000, 5_000),  // every one due: the interval
        ] as [([Int64], Int64, Int64)])
    func sleepsUntilTheNextRetryAtMostThePollInterval(due: [Int64], now: Int64, millis: Int64) {
        var times = RetryTimes()
        for time in due.reversed() { times.add(time) }
        #expect(times.sleep(atMillis: now, atMost: .seconds(5)) == .milliseconds(millis))
        #expect(times.due.allSatisfy { $0 > now })
    }

    @Test func keepsTheEarliestUpToItsCapacity() {
        var times = RetryTimes()
        for time in (0..<Int64(RetryTimes.capacity + 10)).reversed() { times.add(time + 10) }
        times.add(1)
        #expect(times.due.count == RetryTimes.capacity)
        #expect(times.due.first == 1 && times.due == times.due.sorted())
        #expect(times.due.last == Int64(RetryTimes.capacity) + 8)
    }
}
