import Foundation
import TabWebhooks
import Testing

@Suite struct RetryScheduleTests {
    @Test func failuresAreRetriedOnThePublishedScheduleThenFailed() {
        let waits = (1...8).map { RetrySchedule.next(after: $0, answer: .status(500)) }
        #expect(
            waits == [
                .retry(afterSeconds: 5), .retry(afterSeconds: 300), .retry(afterSeconds: 1800), .retry(afterSeconds: 7200),
                .retry(afterSeconds: 18_000), .retry(afterSeconds: 36_000), .retry(afterSeconds: 36_000), .failed,
            ])
        #expect(RetrySchedule.attempts == 8)
        #expect(RetrySchedule.next(after: 9, answer: .status(503)) == .failed)
        #expect(RetrySchedule.next(after: 0, answer: .status(503)) == .failed)
    }

    @Test func anyTwoHundredIsDeliveredWhateverTheAttempt() {
        for status in [200, 201, 202, 204, 299] {
            #expect(RetrySchedule.next(after: 1, answer: .status(status)) == .delivered)
            #expect(RetrySchedule.next(after: 8, answer: .status(status)) == .delivered)
        }
    }

    @Test func goneDisablesTheWebhookAndEverythingElseRetries() {
        #expect(RetrySchedule.next(after: 1, answer: .status(410)) == .disableWebhook)
        #expect(RetrySchedule.next(after: 8, answer: .status(410)) == .disableWebhook)
        for status in [100, 199, 300, 301, 302, 304, 400, 401, 404, 429, 500, 502] {
            #expect(RetrySchedule.next(after: 2, answer: .status(status)) == .retry(afterSeconds: 300), "\(status)")
        }
        #expect(RetrySchedule.next(after: 3, answer: .noAnswer("timed out after 10 s")) == .retry(afterSeconds: 1800))
    }

    @Test func aDeliveryRecordsEachAttemptAndWhatFollows() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var delivery = Delivery(id: "msg_a", webhookID: "wh_1", eventID: 7, type: "layout.published", at: start)
        #expect(delivery.state == .pending)
        #expect(delivery.nextAttemptAt == start)
        #expect(delivery.record(.noAnswer("connection refused"), at: start) == .retry(afterSeconds: 5))
        #expect(delivery.attempts == 1)
        #expect(delivery.lastError == "connection refused")
        #expect(delivery.lastStatus == nil)
        #expect(delivery.nextAttemptAt == start.addingTimeInterval(5))
        #expect(delivery.record(.status(503), at: start.addingTimeInterval(5)) == .retry(afterSeconds: 300))
        #expect(delivery.lastStatus == 503)
        #expect(delivery.lastError == nil)
        #expect(delivery.record(.status(204), at: start.addingTimeInterval(305)) == .delivered)
        #expect(delivery.state == .delivered)
        #expect(delivery.nextAttemptAt == nil)
        #expect(delivery.attempts == 3)

        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(delivery)) as? [String: Any])
        #expect(object["id"] as? String == "msg_a")
        #expect(object["webhookId"] as? String == "wh_1")
        #expect(object["eventId"] as? Int == 7)
        #expect(object["type"] as? String == "layout.published")
        #expect(object["attempts"] as? Int == 3)
        #expect(object["state"] as? String == "delivered")
        #expect(object["lastStatus"] as? Int == 204)
        #expect(object["lastError"] is NSNull)
        #expect(object["nextAttemptAt"] is NSNull)
        #expect(object["at"] as? String == "2027-01-15T08:00:00Z")
    }

    @Test func aDeliveryFailsAfterTheEighthAttemptOrOnGoneAndARedeliveryIsOneMoreAttempt() {
        let start = Date(timeIntervalSince1970: 0)
        var delivery = Delivery(id: "msg_b", webhookID: "wh_1", eventID: 1, type: "promote", at: start)
        var steps: [DeliveryStep] = []
        for _ in 1...8 { steps.append(delivery.record(.status(500), at: start)) }
        #expect(steps.last == .failed)
        #expect(delivery.state == .failed)
        #expect(delivery.nextAttemptAt == nil)

        delivery.redeliver(at: start.addingTimeInterval(99))
        #expect(delivery.state == .pending)
        #expect(delivery.nextAttemptAt == start.addingTimeInterval(99))
        #expect(delivery.record(.status(500), at: start.addingTimeInterval(99)) == .failed)
        #expect(delivery.attempts == 9)

        var gone = Delivery(id: "msg_c", webhookID: "wh_2", eventID: 2, type: "promote", at: start)
        #expect(gone.record(.status(410), at: start) == .disableWebhook)
        #expect(gone.state == .failed)
    }
}
