/// A day of the proleptic Gregorian calendar and its count of days from 1970-01-01: the one place the calendar is
/// computed (Howard Hinnant's `days_from_civil` and `civil_from_days`), for RFC 3339 times and HTTP dates alike.
public struct CivilDate: Sendable, Hashable {
    /// The year, the month (1 to 12) and the day (1 to the month's length).
    public var year, month, day: Int64

    public init(year: Int64, month: Int64, day: Int64) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date `days` days after 1970-01-01 (before it when negative).
    public init(daysSince1970 days: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days from 1970-01-01 to this date (negative before it).
    public var daysSince1970: Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Whether the month is 1–12 and the day exists in it (29 February only in leap years).
    public var exists: Bool {
        (1...12).contains(month) && day >= 1 && day <= Self.days(inMonth: month, year: year)
    }

    /// The length of a month (1–12) of `year`.
    public static func days(inMonth month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The day of the week, 0 for Sunday to 6 for Saturday.
    public var weekday: Int { Int(((daysSince1970 % 7) + 7 + 4) % 7) }  // 1970-01-01 was a Thursday.
}
