import TabTime

/// HTTP-date (RFC 9110 §5.6.7) to and from Unix seconds.
public enum HTTPDate {
    /// The Unix time of an HTTP-date in any of its three forms, or nil when `value` is none of them.
    ///
    /// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
    /// - RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year more than 50 years after `now` is taken as the
    ///   latest past year with those digits, as §5.6.7 requires)
    /// - asctime: `Sun Nov  6 08:49:37 1994`
    ///
    /// Names are case-sensitive as the grammar says; the day name must be a day name of the right length but is not
    /// checked against the date; the day must exist in its month; hour 0–23, minute 0–59, second 0–60 (a leap
    /// second counts as the next second). Whitespace around the value is ignored.
    /// - Parameters:
    ///   - value: the field value.
    ///   - now: the current Unix time, for RFC 850's two-digit years.
    public static func seconds(_ value: FieldLine, now: Int64) -> Int64? {
        let range = value.whole.trimming(value) { $0.isOWS }
        var reader = Reader(line: value, index: range.start, end: range.end)
        if let seconds = reader.imfFixdate() { return seconds }
        reader.index = range.start
        if let seconds = reader.rfc850(now: now) { return seconds }
        reader.index = range.start
        return reader.asctime()
    }

    /// ``seconds(_:now:)`` for a field's lines: nil unless there is exactly one (a date is no list, and holds a comma).
    public static func seconds(now: Int64, lines: FieldLines) -> Int64? {
        var count = 0
        var result: Int64?
        lines { line in
            count += 1
            if count == 1 { result = seconds(line, now: now) }
        }
        return count == 1 ? result : nil
    }

    /// ``seconds(now:lines:)`` for lines held in a sequence.
    @inlinable
    public static func seconds(_ lines: some Sequence<FieldLine>, now: Int64) -> Int64? {
        seconds(now: now) { yield in
            for line in lines { yield(line) }
        }
    }

    /// `seconds` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), for `Last-Modified` and `Date`.
    public static func imfFixdate(_ seconds: Int64) -> String { Timestamp(unixSeconds: seconds).httpDate }

    static let shortDayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// A cursor over the value; each method reads one form from `index` or returns nil.
    struct Reader {
        let line: FieldLine
        var index: Int
        let end: Int

        mutating func imfFixdate() -> Int64? {
            // day-name "," SP date1 SP time-of-day SP GMT; date1 = day SP month SP year
            guard name(HTTPDate.shortDayNames) != nil, literal(","), literal(" "), let day = digits(2), literal(" "),
                let month = name(HTTPDate.monthNames), literal(" "), let year = digits(4), literal(" ")
            else { return nil }
            return finish(year: Int64(year), month: month + 1, day: day)
        }

        mutating func rfc850(now: Int64) -> Int64? {
            // day-name-l "," SP date2 SP time-of-day SP GMT; date2 = day "-" month "-" 2DIGIT
            guard name(HTTPDate.longDayNames) != nil, literal(","), literal(" "), let day = digits(2), literal("-"),
                let month = name(HTTPDate.monthNames), literal("-"), let twoDigits = digits(2), literal(" ")
            else { return nil }
            let nowYear = CivilDate(daysSince1970: now >= 0 ? now / 86_400 : (now - 86_399) / 86_400).year
            let century = nowYear - ((nowYear % 100) + 100) % 100
            var year = century + Int64(twoDigits)
            if year > nowYear + 50 { year -= 100 }
            return finish(year: year, month: month + 1, day: day)
        }

        mutating func asctime() -> Int64? {
            // day-name SP date3 SP time-of-day SP year; date3 = month SP ( 2DIGIT / ( SP DIGIT ) )
            guard name(HTTPDate.shortDayNames) != nil, literal(" "), let month = name(HTTPDate.monthNames), literal(" ")
            else { return nil }
            let day: Int
            if literal(" ") {
                guard let digit = digits(1) else { return nil }
                day = digit
            } else {
                guard let twoDigits = digits(2) else { return nil }
                day = twoDigits
            }
            guard literal(" "), let time = timeOfDay(), literal(" "), let year = digits(4), index == end else { return nil }
            return seconds(year: Int64(year), month: month + 1, day: day, time: time)
        }

        /// time-of-day SP "GMT", then the end; the date's seconds.
        private mutating func finish(year: Int64, month: Int, day: Int) -> Int64? {
            guard let time = timeOfDay(), literal(" "), literal("G"), literal("M"), literal("T"), index == end else { return nil }
            return seconds(year: year, month: month, day: day, time: time)
        }

        private func seconds(year: Int64, month: Int, day: Int, time: Int) -> Int64? {
            let date = CivilDate(year: year, month: Int64(month), day: Int64(day))
            guard date.exists else { return nil }
            return date.daysSince1970 * 86_400 + Int64(time)
        }

        /// hour ":" minute ":" second, as seconds of the day.
        private mutating func timeOfDay() -> Int? {
            guard let hour = digits(2), hour < 24, literal(":"), let minute = digits(2), minute < 60, literal(":"),
                let second = digits(2), second <= 60
            else { return nil }
            return hour * 3600 + minute * 60 + second
        }

        private mutating func literal(_ character: Unicode.Scalar) -> Bool {
            guard index < end, line[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        private mutating func digits(_ count: Int) -> Int? {
            guard end - index >= count else { return nil }
            var value = 0
            for offset in 0..<count {
                let byte = line[index + offset]
                guard byte.isDigit else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }

        /// The index in `names` of the name at the cursor (case-sensitive).
        private mutating func name(_ names: [String]) -> Int? {
            for (position, name) in names.enumerated() {
                var offset = 0
                var equal = true
                for byte in name.utf8 {
                    guard index + offset < end, line[index + offset] == byte else {
                        equal = false
                        break
                    }
                    offset += 1
                }
                if equal {
                    index += offset
                    return position
                }
            }
            return nil
        }
    }
}
