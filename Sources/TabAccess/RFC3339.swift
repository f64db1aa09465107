import Foundation

/// Times in JSON: RFC 3339 `date-time`, read strictly and written as `2026-11-25T16:00:00Z`.
public enum RFC3339 {
    /// `date` in UTC with whole seconds, the form the rest of the API writes.
    public static func string(from date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(secondsFromGMT: 0)!))  // UTC always exists.
    }

    /// The instant `text` names, or nil unless it is `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` with a real date
    /// (`T` and `Z` in either case, as RFC 3339 §5.6 allows; a leap second `:60` is refused).
    public static func date(from text: some StringProtocol) -> Date? {
        let c = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= c.count else { return nil }
            var value = 0
            for index in range {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c[index]) else { return nil }
                value = value * 10 + Int(c[index] - UInt8(ascii: "0"))
            }
            return value
        }
        func byte(_ index: Int, _ allowed: String) -> Bool { index < c.count && allowed.utf8.contains(c[index]) }
        guard let year = number(0..<4), byte(4, "-"), let month = number(5..<7), byte(7, "-"), let day = number(8..<10),
            byte(10, "Tt"), let hour = number(11..<13), byte(13, ":"), let minute = number(14..<16), byte(16, ":"),
            let second = number(17..<19)
        else { return nil }
        let monthLengths = [31, year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), (1...monthLengths[month - 1]).contains(day), hour < 24, minute < 60, second < 60 else {
            return nil
        }
        var index = 19
        var fraction = 0.0
        if byte(index, ".") {
            var scale = 0.1
            index += 1
            let start = index
            while let digit = number(index..<(index + 1)) {
                fraction += Double(digit) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offset = 0
        if byte(index, "Zz") {
            index += 1
        } else if byte(index, "+-"), let hours = number((index + 1)..<(index + 3)), byte(index + 3, ":"),
            let minutes = number((index + 4)..<(index + 6)), hours < 24, minutes < 60
        {
            offset = (hours * 60 + minutes) * 60 * (c[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        } else {
            return nil
        }
        guard index == c.count else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days-from-civil).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// ISO 8601 durations of fixed length: `PnW` or `PnDTnHnMnS` (integers; seconds may have a fraction). Years and
/// months are refused: their length depends on the date they start from.
public enum ISO8601Duration {
    /// The seconds `text` lasts, or nil when it is not such a duration.
    public static func seconds(_ text: some StringProtocol) -> TimeInterval? {
        var rest = Substring(text)
        guard rest.first == "P", rest.count > 1 else { return nil }
        rest = rest.dropFirst()
        if rest.last == "W" {
            guard let weeks = Int(rest.dropLast()), weeks >= 0, !rest.dropLast().contains("+") else { return nil }
            return TimeInterval(weeks) * 7 * 86_400
        }
        var total = 0.0
        var inTime = false
        var sawComponent = false
        var order = ["D", "T", "H", "M", "S"][...]  // Designators in the order they may appear.
        var digits = ""
        for character in rest {
            if character.isASCII, character.isNumber || character == "." {
                digits.append(character)
                continue
            }
            let designator = String(character)
            guard let position = order.firstIndex(of: designator) else { return nil }
            order = order[(position + 1)...]
            if designator == "T" {
                guard digits.isEmpty else { return nil }
                inTime = true
                continue
            }
            guard !digits.isEmpty, let value = Double(digits), designator == "S" || !digits.contains(".") else { return nil }
            guard designator == "D" ? !inTime : inTime else { return nil }
            total += value * ["D": 86_400, "H": 3600, "M": 60, "S": 1][designator]!  // A designator of the list.
            digits = ""
            sawComponent = true
        }
        guard digits.isEmpty, sawComponent, !(inTime && rest.last == "T") else { return nil }
        return total
    }
}
