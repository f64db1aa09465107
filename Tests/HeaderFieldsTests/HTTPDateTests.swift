import Foundation
import HeaderFields
import Testing

@Suite struct HTTPDateTests {
    /// 2026-11-23, for RFC 850's two-digit years.
    let now: Int64 = 1_795_392_000

    func parse(_ value: String) -> Int64? { withLines([value]) { HTTPDate.seconds($0, now: now) } }

    @Test func theThreeFormsOfRFC9110AreRead() {
        #expect(parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        #expect(parse("Sun Nov 06 08:49:37 1994") == 784_111_777)
        #expect(parse("  Sun, 06 Nov 1994 08:49:37 GMT\t") == 784_111_777)
        #expect(parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(parse("Wed, 31 Dec 1969 23:59:59 GMT") == -1)
        #expect(parse("Tue, 29 Feb 2000 12:00:00 GMT") == 951_825_600)
        #expect(parse("Sat, 31 Dec 2016 23:59:60 GMT") == 1_483_228_800)
    }

    /// RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is the latest past year with those digits.
    @Test func rfc850YearsAreTakenWithinFiftyYearsOfNow() {
        #expect(parse("Thursday, 01-Jan-70 00:00:00 GMT") == Int64(HTTPDateTests.days(2070)) * 86_400)
        #expect(parse("Friday, 01-Jan-77 00:00:00 GMT") == Int64(HTTPDateTests.days(1977)) * 86_400)
        #expect(parse("Monday, 01-Jan-26 00:00:00 GMT") == Int64(HTTPDateTests.days(2026)) * 86_400)
    }

    static func days(_ year: Int) -> Int {
        var components = DateComponents()
        components.year = year
        components.month = 1
        components.day = 1
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return Int(calendar.date(from: components)!.timeIntervalSince1970) / 86_400
    }

    @Test(arguments: [
        "", "GMT", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 gmt", "sun, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 nov 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT x", "Sun, 06 Nov 1994 08:49:37", "1994-11-06T08:49:37Z", "784111777",
        "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994 GMT", "Sun Nov 6 08:49:37 1994", "Sun Nov  6 8:49:37 1994", "Sun, 06 Nov 1994 08:49:37 GMT,",
        "Sun, 06 Nov 1994 08:49:3a GMT", "Sun, 06 Nov 1994 08:49 GMT",
    ])
    func garbageIsRefused(value: String) {
        #expect(parse(value) == nil)
    }

    @Test func aDateOnSeveralLinesIsRefused() {
        #expect(withLines(["Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"]) { HTTPDate.seconds($0, now: now) } == nil)
        #expect(withLines([]) { HTTPDate.seconds($0, now: now) } == nil)
    }

    /// Foundation's formatter is the independent oracle: our IMF-fixdate is its text, and reading it back gives the time.
    @Test func imfFixdateMatchesFoundationAndRoundTrips() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SeededGenerator(state: 5)
        for _ in 0..<5_000 {
            // 1901 to 2099: every day name, month and leap rule of the range a client sends.
            let seconds = Int64.random(in: -2_177_452_800...4_102_444_799, using: &generator)
            let text = HTTPDate.imfFixdate(seconds)
            #expect(text == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))))
            #expect(parse(text) == seconds)
        }
    }
}
