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
}
