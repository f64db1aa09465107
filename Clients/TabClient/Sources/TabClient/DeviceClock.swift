import Foundation

/// The device's wall clock, as a ``TabClient`` in manifest mode reads it: a rollout's coming steps are times
/// (`rollout.schedule[].at`), and an install that a step moves switches to its prefetched candidate when this clock
/// reaches it. ``SystemDeviceClock`` (the default) is the system's; tests give a clock of their own that they move.
public protocol DeviceClock: Sendable {
    /// The time now.
    var now: Date { get }
    /// Returns once ``now`` has reached `deadline` (at once when it has already).
    /// - Throws: `CancellationError` when the calling task is cancelled first.
    func sleep(until deadline: Date) async throws
}

/// The system's clock (`Date()`). A wait for a time re-reads the clock at least every minute, so that a clock set
/// forward (by the user or by time synchronization) is followed.
public struct SystemDeviceClock: DeviceClock {
    public init() {}

    public var now: Date { Date() }

    public func sleep(until deadline: Date) async throws {
        while true {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return }
            try await Task.sleep(for: .milliseconds(Int64((min(remaining, 60) * 1000).rounded(.up))))
        }
    }
}

/// RFC 3339 times as the manifest's schedule gives them (`2026-11-26T21:00:00.000Z`), read strictly and the same way
/// as the Java client reads them: `YYYY-MM-DDTHH:MM:SS`, an optional fraction (read to the millisecond, the rest
/// dropped), and `Z` or an offset `±HH:MM`.
enum RFC3339 {
    /// Milliseconds since 1970-01-01T00:00:00Z, or nil when `text` is not such a time.
    static func milliseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var value = 0
            for byte in b[start..<(start + count)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func at(_ index: Int, _ characters: String) -> Bool { index < b.count && characters.utf8.contains(b[index]) }
        guard b.count >= 20, let year = number(0, 4), at(4, "-"), let month = number(5, 2), at(7, "-"), let day = number(8, 2),
            at(10, "Tt"), let hour = number(11, 2), at(13, ":"), let minute = number(14, 2), at(16, ":"), let second = number(17, 2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var millis = 0
        if at(index, ".") {
            index += 1
            let start = index
            while index < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[index]) { index += 1 }
            guard index > start else { return nil }
            for position in 0..<3 {
                millis = millis * 10 + (start + position < index ? Int(b[start + position] - UInt8(ascii: "0")) : 0)
            }
        }
        var offsetMinutes = 0
        if at(index, "Zz") {
            index += 1
        } else if at(index, "+-") {
            let sign = b[index] == UInt8(ascii: "-") ? -1 : 1
            guard let hours = number(index + 1, 2), at(index + 3, ":"), let minutes = number(index + 4, 2), hours < 24, minutes < 60
            else { return nil }
            offsetMinutes = sign * (hours * 60 + minutes)
            index += 6
        } else {
            return nil
        }
        guard index == b.count else { return nil }
        let seconds =
            Int64(daysFromCivil(year: year, month: month, day: day)) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
            - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(millis)
    }

    /// The time `text` names, or nil.
    static func date(_ text: String) -> Date? {
        milliseconds(text).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
