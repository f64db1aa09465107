import Testing

@testable import TabDelivery

/// The strict ISO 8601 duration reader behind rollout holds.
@Suite struct ISODurationTests {
    @Test(
        arguments: [
            ("PT10M", 600_000), ("PT30M", 1_800_000), ("PT1H", 3_600_000), ("PT1H30M", 5_400_000), ("P1D", 86_400_000),
            ("P2W", 1_209_600_000), ("P1DT2H", 93_600_000), ("PT0S", 0), ("PT0.5S", 500), ("PT1,25S", 1_250), ("PT0.5H", 1_800_000),
            ("PT1.0001S", 1_000), ("P30D", 2_592_000_000), ("PT90M", 5_400_000), ("PT36H", 129_600_000), ("P0D", 0),
        ] as [(String, Int64)])
    func readsDurationsWithDesignators(text: String, milliseconds: Int64) throws {
        let duration = try ISODuration(text)
        #expect(duration.milliseconds == milliseconds)
        #expect(duration.text == text)
    }

    @Test func yearsAndMonthsHaveNoFixedLength() throws {
        #expect(try ISODuration("P1M").milliseconds == nil)
        #expect(try ISODuration("P1Y2M3DT4H5M6.7S").milliseconds == nil)
        #expect(try ISODuration("PT1M").milliseconds == 60_000)
    }

    @Test(arguments: [
        ("", "start with P"), ("10M", "start with P"), ("P", "no component"), ("PT", "followed by"), ("P1DT", "followed by"),
        ("PT10", "no designator"), ("PT10X", "not a designator"), ("P1H", "not a designator"), ("PT1D", "not a designator"),
        ("PT1M1H", "order"), ("PT1H1H", "order"), ("P1W1D", "weeks"), ("PT1.5H30M", "only the last"), ("PT.5S", "number"),
        ("PT1.S", "digits"), ("-PT1H", "start with P"), ("P-1D", "number"), ("pt10m", "start with P"), ("PT10m", "not a designator"),
        ("PT 10M", "number"), ("P0001-02-03", "not a designator"), ("PT1HT1M", "twice"), ("PT99999999999999999999S", "too long"),
        ("P9999999999999W", "too long"), ("PT١٠M", "number"),
    ])
    func refusesAnythingElseSayingWhy(text: String, why: String) {
        let error = failure { try ISODuration(text) }
        #expect(pointers(error) == [""])
        #expect(messages(error).contains("not an ISO 8601 duration"))
        #expect(messages(error).contains(why), "\(text): \(messages(error))")
    }
}

/// RFC 3339 times in and out.
@Suite struct TimestampTests {
    @Test func formatsUTCWithMilliseconds() {
        #expect(Timestamp(unixMillis: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(unixMillis: 1_795_622_400_123).rfc3339 == "2026-11-25T16:00:00.123Z")
        #expect(Timestamp(unixMillis: -1).rfc3339 == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(unixMillis: 951_782_400_000).rfc3339 == "2000-02-29T00:00:00.000Z")
    }

    @Test func parsesZuluOffsetsFractionsAndLowercase() {
        #expect(Timestamp.parseRFC3339("2026-11-25T16:00:00Z")?.unixMillis == 1_795_622_400_000)
        #expect(Timestamp.parseRFC3339("2026-11-25t17:30:00.5+01:30")?.unixMillis == 1_795_622_400_500)
        #expect(Timestamp.parseRFC3339("2026-11-25 11:00:00.123456-05:00")?.unixMillis == 1_795_622_400_123)
        #expect(Timestamp.parseRFC3339("2000-02-29T00:00:00z")?.unixMillis == 951_782_400_000)
        #expect(Timestamp.parseRFC3339("2016-12-31T23:59:60Z")?.rfc3339 == "2016-12-31T23:59:59.999Z")
        for millis: Int64 in [0, 1, 999, 1_795_622_400_123, 4_102_444_799_999] {
            #expect(Timestamp.parseRFC3339(Timestamp(unixMillis: millis).rfc3339)?.unixMillis == millis)
        }
    }

    @Test func theStrictReadingRefusesASpaceForTAndALeapSecond() {
        // Tokens and the audit log read times strictly; rollouts and Alertmanager's alerts as above.
        for text in ["2026-11-25 16:00:00Z", "2016-12-31T23:59:60Z"] {
            #expect(Timestamp(rfc3339: text, .lenient) != nil)
            #expect(Timestamp(rfc3339: text, .strict) == nil)
        }
        #expect(Timestamp(rfc3339: "2026-11-25T16:00:00.123456Z", .strict)?.unixMillis == 1_795_622_400_123)
        #expect(RFC3339DateTime("2026-11-25T16:00:00.123456Z", .strict)?.fraction == [1, 2, 3, 4, 5, 6])
    }

    @Test(arguments: [
        "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-31T00:00:00Z", "2026-11-25T24:00:00Z",
        "2026-11-25T16:00:00", "2026-11-25", "2026-11-25T16:00Z", "2026-11-25T16:00:00.Z", "2026-11-25T16:00:00+0100",
        "26-11-25T16:00:00Z", "2026-11-25T16:00:00Z ", "tomorrow", "2026-11-25T16:00:00+24:00",
    ])
    func refusesWhatIsNotRFC3339(text: String) {
        #expect(Timestamp.parseRFC3339(text) == nil)
    }
}
