/// A point in time in Unix milliseconds: every decision here takes its clock as an argument (the store's clock, so
/// that replicas agree), and nothing in this module reads the system time.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var unixMillis: Int64

    public init(unixMillis: Int64) { self.unixMillis = unixMillis }

    /// This instant moved by `milliseconds` (negative for earlier).
    public func adding(milliseconds: Int64) -> Timestamp { Timestamp(unixMillis: unixMillis + milliseconds) }

    /// Milliseconds from `earlier` to this instant.
    public func milliseconds(since earlier: Timestamp) -> Int64 { unixMillis - earlier.unixMillis }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.unixMillis < rhs.unixMillis }

    /// RFC 3339 in UTC with milliseconds, as the rest of the API writes times: `2026-11-22T05:21:00.123Z`.
    public var rfc3339: String {
        let millis = ((unixMillis % 1000) + 1000) % 1000
        let seconds = (unixMillis - millis) / 1000
        var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil from days (Howard Hinnant's algorithm).
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ n: Int64, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2))"
            + ":\(pad(secondOfDay % 60, 2)).\(pad(millis, 3))Z"
    }

    public var description: String { rfc3339 }

    /// Parses an RFC 3339 date-time (`2026-11-25T16:00:00Z`, `2026-11-25t17:00:00.5+01:00`): four-digit year, a
    /// real calendar date, `T` (or `t`, or a space as RFC 3339 §5.6 allows), seconds `00`–`59` (a leap second `60`
    /// is read as `59.999`), an optional fraction (kept to the millisecond, the rest dropped), and `Z` or an offset.
    /// - Returns: nil for anything else.
    public static func parseRFC3339(_ text: String) -> Timestamp? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + width] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            index += width
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var millis: Int64 = 0
        if expect(".") {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            guard index > start else { return nil }
            for (position, byte) in bytes[start..<min(index, start + 3)].enumerated() {
                millis += Int64(byte - 0x30) * [100, 10, 1][position]
            }
        }
        var offsetMinutes: Int64 = 0
        if !expect("Zz") {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") else { return nil }
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = number(2), expect(":"), let offsetMinute = number(2), offsetHours <= 23, offsetMinute <= 59
            else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetMinute)
        }
        guard index == bytes.count else { return nil }
        let (secondOfMinute, extraMillis): (Int64, Int64) = second == 60 ? (59, 999) : (second, millis)
        let seconds =
            daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + secondOfMinute
            - offsetMinutes * 60
        return Timestamp(unixMillis: seconds * 1000 + extraMillis)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's days-from-civil).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
