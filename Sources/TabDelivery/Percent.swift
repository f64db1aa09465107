/// A share of installs from 0 to 100 percent, held exactly in hundredths of a percent (basis points), the
/// resolution of ``Bucket``: an install is in the share when its bucket is below ``basisPoints``.
public struct Percent: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Hundredths of a percent, `0 ... 10_000`.
    public let basisPoints: Int

    /// Nobody.
    public static let zero = Percent(unchecked: 0)
    /// Everybody.
    public static let all = Percent(unchecked: Bucket.count)

    /// A percent from its basis points; nil outside `0 ... 10_000`.
    public init?(basisPoints: Int) {
        guard (0...Bucket.count).contains(basisPoints) else { return nil }
        self.basisPoints = basisPoints
    }

    /// A percent from a JSON number such as `5`, `25` or `0.5`; nil when outside 0–100 or finer than a hundredth
    /// (a bucket is 1/10,000 of installs, so `12.345` has no meaning).
    public init?(_ value: Double) {
        guard value.isFinite, value >= 0, value <= 100 else { return nil }
        let scaled = value * 100
        let rounded = scaled.rounded()
        guard abs(scaled - rounded) < 1e-6 else { return nil }
        self.basisPoints = Int(rounded)
    }

    private init(unchecked basisPoints: Int) { self.basisPoints = basisPoints }

    /// Whether an install in `bucket` is within this share (`bucket < percent × 100`).
    public func covers(bucket: Int) -> Bool { bucket < basisPoints }

    /// The percent as a number: `5`, `0.5`, `12.25`.
    public var value: Double { Double(basisPoints) / 100 }

    /// Whole percents print without a fraction (`5`), others with what they have (`0.5`, `12.25`).
    public var description: String {
        let whole = basisPoints / 100
        let hundredths = basisPoints % 100
        if hundredths == 0 { return "\(whole)" }
        return hundredths % 10 == 0 ? "\(whole).\(hundredths / 10)" : "\(whole).\(hundredths < 10 ? "0" : "")\(hundredths)"
    }

    public static func < (lhs: Percent, rhs: Percent) -> Bool { lhs.basisPoints < rhs.basisPoints }
}
