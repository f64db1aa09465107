/// A UTC calendar time from Unix seconds, formatted for JSON (RFC 3339) and HTTP (IMF-fixdate), with
/// no Foundation formatter and no locale in the way.
public struct UTCDateTime: Sendable, Equatable {
    public let year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64
    /// Days since 1970-01-01.
    let days: Int64

    public init(unixSeconds: Int64) {
        var days = unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds - 86_399) / 86_400
        let secondOfDay = unixSeconds - days * 86_400
        self.days = days
        // Civil-from-days (Howard Hinnant's algorithm).
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
    }

    private static func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }

    private static func four(_ n: Int64) -> String {
        guard n >= 0, n < 1000 else { return "\(n)" }
        let digits = String(n)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// `2026-11-22T05:21:00Z` (the year in four digits at least: `0031-…`, as RFC 3339 requires).
    public var rfc3339: String {
        "\(Self.four(year))-\(Self.two(month))-\(Self.two(day))T\(Self.two(hour)):\(Self.two(minute)):\(Self.two(second))Z"
    }

    /// `Sun, 22 Nov 2026 05:21:00 GMT`
    public var httpDate: String {
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        return
            "\(weekday), \(Self.two(day)) \(months[Int(month - 1)]) \(year) \(Self.two(hour)):\(Self.two(minute)):\(Self.two(second)) GMT"
    }

    /// Unix seconds of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); nil for anything else.
    public static func parseHTTPDate(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        // Every field is bounded before any arithmetic: this parses client input (If-Modified-Since).
        let digits = { (part: Substring, count: Int) in part.count == count && part.allSatisfy { $0.isASCII && $0.isNumber } }
        guard parts.count == 6, parts[5] == "GMT", digits(parts[1], 2), digits(parts[3], 4), let day = Int64(parts[1]),
            (1...31).contains(day), let monthIndex = months.firstIndex(of: String(parts[2])), let year = Int64(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, clock.allSatisfy({ digits($0, 2) }), let h = Int64(clock[0]), let m = Int64(clock[1]),
            let s = Int64(clock[2]), (0...23).contains(h), (0...59).contains(m), (0...60).contains(s)
        else { return nil }
        // Days-from-civil (Howard Hinnant's algorithm).
        let month = Int64(monthIndex + 1)
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + h * 3600 + m * 60 + s
    }
}
