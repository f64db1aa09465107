/// A pattern over names where `*` matches any run of characters (none included) and `?` exactly one; every other
/// character matches itself, case-sensitively. A glob matches the whole name (it is anchored at both ends).
///
/// Matching is the iterative two-pointer method with one saved star: on a mismatch it resumes after the latest
/// `*` only, never earlier ones, so the work is at most (pattern length + 1) × (name length + 1) steps whatever the
/// input: no backtracking that explodes on `a*a*a*…b`.
public struct Glob: Hashable, Sendable, CustomStringConvertible {
    /// The pattern as written.
    public let pattern: String
    private let characters: [Character]

    /// The glob `pattern`; any text is a pattern (the account rules are `AccountGlob`'s).
    public init(_ pattern: String) {
        self.pattern = pattern
        characters = Array(pattern)
    }

    /// Whether the glob is `*` alone (or only stars): it matches every name.
    public var matchesEverything: Bool { !characters.isEmpty && characters.allSatisfy { $0 == "*" } }

    public var description: String { pattern }

    /// Whether the glob matches all of `name`.
    public func matches(_ name: some StringProtocol) -> Bool {
        var steps = 0
        return matches(Array(name), steps: &steps)
    }

    /// `matches(_:)`, counting the comparison steps in `steps` (for the test that bounds them).
    func matches(_ name: [Character], steps: inout Int) -> Bool {
        var p = 0
        var n = 0
        var star: Int? = nil  // Index in the pattern just after the latest `*`.
        var resume = 0  // Index in the name that the latest `*` swallows up to.
        while n < name.count {
            steps += 1
            if p < characters.count, characters[p] == "*" {
                star = p + 1
                resume = n
                p += 1
            } else if p < characters.count, characters[p] == "?" || characters[p] == name[n] {
                p += 1
                n += 1
            } else if let afterStar = star {
                resume += 1
                n = resume
                p = afterStar
            } else {
                return false
            }
        }
        while p < characters.count, characters[p] == "*" {
            steps += 1
            p += 1
        }
        return p == characters.count
    }
}
