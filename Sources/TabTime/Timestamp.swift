/// A point in time in Unix milliseconds: every decision takes its clock as an argument (the store's clock, so that
/// replicas agree).
///
/// The one time type of the server, read and written as RFC 3339 (``init(rfc3339:_:)``, ``rfc3339``,
/// ``rfc3339Seconds``) and written as an HTTP date (``httpDate``).
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var unixMillis: Int64

    public init(unixMillis: Int64) { self.unixMillis = unixMillis }

    /// The start of a Unix second.
    public init(unixSeconds: Int64) { unixMillis = unixSeconds * 1000 }

    /// This instant moved by `milliseconds` (negative for earlier).
    public func adding(milliseconds: Int64) -> Timestamp { Timestamp(unixMillis: unixMillis + milliseconds) }

    /// Milliseconds from `earlier` to this instant.
    public func milliseconds(since earlier: Timestamp) -> Int64 { unixMillis - earlier.unixMillis }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.unixMillis < rhs.unixMillis }

    /// The whole Unix second this instant falls in (rounded down, also before 1970).
    public var unixSeconds: Int64 { unixMillis >= 0 ? unixMillis / 1000 : (unixMillis - 999) / 1000 }

    /// RFC 3339 in UTC with milliseconds, as the API writes times: `2026-11-22T05:21:00.123Z`.
    public var rfc3339: String {
        let millis = String(unixMillis - unixSeconds * 1000)
        return Self.rfc3339(unixSeconds: unixSeconds, fraction: String(repeating: "0", count: 3 - millis.count) + millis)
    }

    /// RFC 3339 in UTC with whole seconds (the fraction dropped): `2026-11-22T05:21:00Z`, as tokens, the audit log,
    /// webhook deliveries and property-list dates write times.
    public var rfc3339Seconds: String { Self.rfc3339(unixSeconds: unixSeconds, fraction: nil) }

    /// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` of a Unix second (the year in four digits at least, as RFC 3339 requires).
    public static func rfc3339(unixSeconds: Int64, fraction: String?) -> String {
        let (date, hour, minute, second) = civil(unixSeconds)
        return "\(four(date.year))-\(two(date.month))-\(two(date.day))T\(two(hour)):\(two(minute)):\(two(second))"
            + (fraction.map { "." + $0 } ?? "") + "Z"
    }

    /// IMF-fixdate (RFC 9110 §5.6.7) of the second this instant falls in: `Sun, 22 Nov 2026 05:21:00 GMT`.
    public var httpDate: String {
        let (date, hour, minute, second) = Self.civil(unixSeconds)
        let weekday = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][date.weekday]
        let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][Int(date.month - 1)]
        return
            "\(weekday), \(Self.two(date.day)) \(month) \(Self.four(date.year)) \(Self.two(hour)):\(Self.two(minute)):\(Self.two(second)) GMT"
    }

    public var description: String { rfc3339 }

    private static func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }

    /// A year in four digits at least (`0031`), as RFC 3339 and IMF-fixdate write it.
    private static func four(_ year: Int64) -> String {
        let digits = String(year)
        return year >= 0 && digits.count < 4 ? String(repeating: "0", count: 4 - digits.count) + digits : digits
    }

    /// The date and time of day of a Unix second.
    private static func civil(_ seconds: Int64) -> (CivilDate, hour: Int64, minute: Int64, second: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        return (CivilDate(daysSince1970: days), secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60)
    }
}

extension Timestamp {
    /// Reads an RFC 3339 date-time (`2026-11-25T16:00:00Z`, `2026-11-25t17:00:00.5+01:00`) under `rules`, the
    /// fraction kept to the millisecond (the rest dropped); a leap second, where the rules read one, is `59.999`.
    /// - Returns: nil for anything else (``RFC3339DateTime``).
    public init?(rfc3339 text: some StringProtocol, _ rules: RFC3339DateTime.Rules = .lenient) {
        guard let read = RFC3339DateTime(text, rules) else { return nil }
        if read.isLeapSecond {
            self.init(unixMillis: read.unixSeconds * 1000 + 999)
        } else {
            let millis = read.fraction.prefix(3).enumerated().reduce(Int64(0)) { $0 + Int64($1.element) * [100, 10, 1][$1.offset] }
            self.init(unixMillis: read.unixSeconds * 1000 + millis)
        }
    }

    /// ``init(rfc3339:_:)`` with the lenient rules (the name rollouts and alerts have read times by).
    public static func parseRFC3339(_ text: String) -> Timestamp? { Timestamp(rfc3339: text) }
}

/// An RFC 3339 `date-time` read into the Unix second it names and the digits of its fraction: four-digit year, a
/// real calendar date, `T` or `t`, hour `00`–`23`, minute `00`–`59`, seconds `00`–`59`, an optional fraction of one
/// digit at least, and `Z`, `z` or an offset `±HH:MM` (hours `00`–`23`, minutes `00`–`59`); nothing after it.
///
/// Two readings differ in what they take besides, and each endpoint keeps the one it has always had:
/// ``Rules/lenient`` (rollouts' `startAt`, Alertmanager's `startsAt`) also takes a space for the `T` (RFC 3339 §5.6's
/// note) and a leap second `60`; ``Rules/strict`` (tokens' `expiresAt`, audit entries) takes neither.
public struct RFC3339DateTime: Sendable, Equatable {
    /// What a reading takes beyond the grammar above.
    public struct Rules: Sendable, Equatable {
        /// A space in place of the `T`.
        public var spaceForT: Bool
        /// Seconds `60` (a leap second), read as the last millisecond of second `59`.
        public var leapSecond: Bool

        public init(spaceForT: Bool, leapSecond: Bool) {
            self.spaceForT = spaceForT
            self.leapSecond = leapSecond
        }

        public static let lenient = Rules(spaceForT: true, leapSecond: true)
        public static let strict = Rules(spaceForT: false, leapSecond: false)
    }

    /// The Unix second named, the offset applied (second `59` for a leap second).
    public var unixSeconds: Int64
    /// The fraction's digits (each 0–9), as many as written.
    public var fraction: [UInt8]
    /// Whether the seconds were `60`.
    public var isLeapSecond: Bool

    public init?(_ text: some StringProtocol, _ rules: Rules) {
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
            expect(rules.spaceForT ? "Tt " : "Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2), CivilDate(year: year, month: month, day: day).exists, hour <= 23, minute <= 59,
            second <= (rules.leapSecond ? 60 : 59)
        else { return nil }
        var fraction: [UInt8] = []
        if expect(".") {
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                fraction.append(bytes[index] - 0x30)
                index += 1
            }
            guard !fraction.isEmpty else { return nil }
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
        isLeapSecond = second == 60
        self.fraction = fraction
        unixSeconds =
            CivilDate(year: year, month: month, day: day).daysSince1970 * 86_400 + hour * 3600 + minute * 60 + min(second, 59)
            - offsetMinutes * 60
    }
}
