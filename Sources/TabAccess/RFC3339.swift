import Foundation
import TabTime

/// Times in JSON as `Date`s: RFC 3339 `date-time` read strictly and written as `2026-11-25T16:00:00Z`, through
/// TabTime's one reader and writer (``TabTime/RFC3339DateTime``, ``TabTime/Timestamp``).
public enum RFC3339 {
    /// `date` in UTC with whole seconds (the fraction dropped), the form the rest of the API writes.
    public static func string(from date: Date) -> String {
        Timestamp.rfc3339(unixSeconds: Int64(date.timeIntervalSince1970.rounded(.down)), fraction: nil)
    }

    /// The instant `text` names, or nil unless it is `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` with a real date
    /// (`T` and `Z` in either case, as RFC 3339 §5.6 allows; a space for the `T` and a leap second `:60` are refused:
    /// ``TabTime/RFC3339DateTime/Rules/strict``). The fraction is kept whole.
    public static func date(from text: some StringProtocol) -> Date? {
        guard let read = RFC3339DateTime(text, .strict) else { return nil }
        var fraction = 0.0
        var scale = 0.1
        for digit in read.fraction {
            fraction += Double(digit) * scale
            scale /= 10
        }
        return Date(timeIntervalSince1970: Double(read.unixSeconds) + fraction)
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
