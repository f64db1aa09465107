import TabJSON

/// An ISO 8601 duration in the format with designators (ISO 8601-1:2019 §5.5.2.4): `PT10M`, `PT1H30M`, `P1D`,
/// `P2W`, `PT0.5S`, `P1Y2M3DT4H5M6.7S`, read strictly.
///
/// - `P` first, then at least one component, each a number and its designator, in the order `Y`, `M`, `D`, and
///   after `T` (which needs at least one component) `H`, `M`, `S`; weeks (`nW`) stand alone.
/// - Numbers are ASCII digits; only the last component may have a fraction, after `.` or `,`.
/// - No sign, no spaces, no lowercase designators, no alternative format (`P0001-02-03T…`).
///
/// Days are 24 hours and weeks 7 days (elapsed time, not the calendar); years and months have no fixed length,
/// so a duration with either has no ``milliseconds``.
public struct ISODuration: Sendable, Hashable, CustomStringConvertible {
    /// The duration as it was written (it is echoed back as is).
    public let text: String
    /// The length in milliseconds (a fraction finer than a millisecond is dropped); nil when the duration has years
    /// or months.
    public let milliseconds: Int64?

    /// Parses `text`.
    /// - Throws: ``RolloutError/invalidBody(_:)`` with one problem at pointer `""` saying what is wrong; a caller
    ///   reading a body puts the value's own pointer in front.
    public init(_ text: String) throws(RolloutError) {
        switch Self.parse(text) {
        case .success(let milliseconds):
            self.text = text
            self.milliseconds = milliseconds
        case .failure(let problem):
            throw .invalidBody([FieldError(pointer: "", message: "'\(Self.shown(text))' is not an ISO 8601 duration: \(problem.why)")])
        }
    }

    public var description: String { text }

    private struct Problem: Error {
        let why: String
        init(_ why: String) { self.why = why }
    }

    private static let millisPerUnit: [UInt8: Int64] = [
        UInt8(ascii: "W"): 604_800_000, UInt8(ascii: "D"): 86_400_000, UInt8(ascii: "H"): 3_600_000,
        UInt8(ascii: "S"): 1000,
    ]

    /// The milliseconds (nil with years or months), or why `text` is not a duration.
    private static func parse(_ text: String) -> Result<Int64?, Problem> {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "P") else { return .failure(Problem("it must start with P (e.g. PT10M)")) }
        // Designators allowed in the date part, then in the time part, each in order and at most once.
        let dateOrder: [UInt8] = Array("YMWD".utf8)
        let timeOrder: [UInt8] = Array("HMS".utf8)
        var inTime = false
        var nextAllowed = 0
        var components: [(designator: UInt8, inTime: Bool, whole: [UInt8], fraction: [UInt8])] = []
        var index = 1
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "T") {
                if inTime { return .failure(Problem("T appears twice")) }
                inTime = true
                nextAllowed = 0
                index += 1
                if index == bytes.count { return .failure(Problem("T must be followed by hours, minutes or seconds")) }
                continue
            }
            let start = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            let whole = Array(bytes[start..<index])
            if whole.isEmpty { return .failure(Problem("expected a number at position \(start + 1)")) }
            var fraction: [UInt8] = []
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: ",") {
                index += 1
                let fractionStart = index
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
                fraction = Array(bytes[fractionStart..<index])
                if fraction.isEmpty { return .failure(Problem("a decimal sign must be followed by digits")) }
            }
            guard index < bytes.count else {
                return .failure(Problem("the number \(String(decoding: whole, as: UTF8.self)) has no designator"))
            }
            let designator = bytes[index]
            index += 1
            let order = inTime ? timeOrder : dateOrder
            guard let position = order.firstIndex(of: designator) else {
                let name = String(decoding: [designator], as: UTF8.self)
                let allowed = inTime ? "H, M or S after T" : "Y, M, W or D before T"
                return .failure(Problem("'\(name)' is not a designator here (\(allowed))"))
            }
            guard position >= nextAllowed else { return .failure(Problem("components must be in the order Y M D T H M S, each once")) }
            nextAllowed = position + 1
            components.append((designator, inTime, whole, fraction))
        }
        if components.isEmpty { return .failure(Problem("it has no component (e.g. PT10M)")) }
        if components.dropLast().contains(where: { !$0.fraction.isEmpty }) {
            return .failure(Problem("only the last component may have a fraction"))
        }
        if components.contains(where: { $0.designator == UInt8(ascii: "W") }) && components.count > 1 {
            return .failure(Problem("weeks cannot be combined with other components"))
        }
        if components.contains(where: { !$0.inTime && ($0.designator == UInt8(ascii: "Y") || $0.designator == UInt8(ascii: "M")) }) {
            return .success(nil)
        }
        var total: Int64 = 0
        for component in components {
            // Years and months returned above; every other designator that passed the order check is in the table.
            let unit = component.designator == UInt8(ascii: "M") ? 60_000 : millisPerUnit[component.designator]!
            guard let millis = milliseconds(whole: component.whole, fraction: component.fraction, unit: unit) else {
                return .failure(Problem("it is too long"))
            }
            let (sum, overflow) = total.addingReportingOverflow(millis)
            if overflow { return .failure(Problem("it is too long")) }
            total = sum
        }
        return .success(total)
    }

    /// `whole.fraction × unit`, truncated to a millisecond; nil on overflow.
    private static func milliseconds(whole: [UInt8], fraction: [UInt8], unit: Int64) -> Int64? {
        guard whole.count <= 15 else { return nil }
        let wholeValue = whole.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
        let (base, overflow) = wholeValue.multipliedReportingOverflow(by: unit)
        if overflow { return nil }
        // The fraction's digits beyond the ninth cannot reach a millisecond of any unit up to a week.
        let digits = fraction.prefix(9)
        let numerator = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - 0x30) }
        var denominator: Int64 = 1
        for _ in digits { denominator *= 10 }
        return base + numerator * unit / denominator
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// `text` shortened for a message.
    static func shown(_ text: String) -> String { text.count > 40 ? text.prefix(40) + "…" : text }
}
