/// The name of an environment: 1 to 32 characters, lowercase ASCII letters, digits, `-` and `_`, starting with a
/// letter (`staging`, `production`, `eu-beta`). Lowercase only, so that `Production` and `production` cannot be two
/// environments; no `:`, so that a rollout's default seed `{account}:{environment}:{id}` reads one way.
public struct EnvironmentName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public static let maximumLength = 32

    public let text: String

    /// The default and only environment when `--environments` is not given.
    public static let production = EnvironmentName(unchecked: "production")

    /// A valid environment name, or nil.
    public init?(_ text: String) {
        guard Self.problem(with: text) == nil else { return nil }
        self.text = text
    }

    fileprivate init(unchecked text: String) { self.text = text }

    /// What is wrong with `text` as an environment name, or nil.
    static func problem(with text: String) -> String? {
        let bytes = Array(text.utf8)
        if bytes.isEmpty { return "an environment name is empty" }
        if bytes.count > maximumLength { return "'\(ISODuration.shown(text))' is longer than \(maximumLength) characters" }
        guard let first = bytes.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z") else {
            return "'\(ISODuration.shown(text))' must start with a lowercase letter"
        }
        let allowed = { (byte: UInt8) in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        if !bytes.allSatisfy(allowed) {
            return "'\(ISODuration.shown(text))' may hold only lowercase letters, digits, '-' and '_'"
        }
        return nil
    }

    public var description: String { text }

    public static func < (lhs: EnvironmentName, rhs: EnvironmentName) -> Bool { lhs.text < rhs.text }
}

/// The environments, in promotion order (`--environments staging,production`; default `production` alone, where
/// everything behaves as if environments did not exist).
///
/// Writes enter the **first** (``entry``); the client plane serves the **last** (``served``) unless a request names
/// another; a promotion goes from one environment to another, by default to the next one in the list.
public struct EnvironmentList: Sendable, Equatable {
    /// The names in promotion order, never empty, no name twice.
    public let names: [EnvironmentName]

    /// `production` alone.
    public static let `default` = EnvironmentList(unchecked: [.production])

    private init(unchecked names: [EnvironmentName]) { self.names = names }

    /// Reads the value of `--environments` or `TABSERVER_ENVIRONMENTS`: names separated by commas, spaces around
    /// them ignored.
    /// - Throws: ``RolloutError/invalidEnvironmentList(_:)`` for an empty list, an empty item, a bad name or a
    ///   name given twice.
    public init(parsing value: String) throws(RolloutError) {
        let items = value.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingSpaces()
        }
        if items.count == 1, items[0].isEmpty {
            throw .invalidEnvironmentList("name at least one environment (e.g. staging,production)")
        }
        var names: [EnvironmentName] = []
        for (position, item) in items.enumerated() {
            if item.isEmpty { throw .invalidEnvironmentList("item \(position + 1) of '\(value)' is empty") }
            if let problem = EnvironmentName.problem(with: item) { throw .invalidEnvironmentList(problem) }
            let name = EnvironmentName(unchecked: item)
            if names.contains(name) { throw .invalidEnvironmentList("'\(item)' is named twice") }
            names.append(name)
        }
        self.names = names
    }

    /// Where writes go unless they name another environment: the first.
    public var entry: EnvironmentName { names[0] }

    /// What the client plane serves unless a request names another environment: the last.
    public var served: EnvironmentName { names[names.count - 1] }

    /// The environment after `name` in promotion order, or nil for the last.
    public func next(after name: EnvironmentName) -> EnvironmentName? {
        guard let index = names.firstIndex(of: name), index + 1 < names.count else { return nil }
        return names[index + 1]
    }

    /// The environment a request names (`?environment=`, `Tabs-Environment`), or `fallback` when it names none.
    /// - Parameter named: the value given, nil when absent (an empty value counts as absent).
    /// - Throws: ``RolloutError/unknownEnvironment(_:)`` (404) for a name that is not in the list.
    public func resolve(_ named: String?, fallback: EnvironmentName) throws(RolloutError) -> EnvironmentName {
        guard let named, !named.isEmpty else { return fallback }
        guard let name = names.first(where: { $0.text == named }) else { throw .unknownEnvironment(named) }
        return name
    }

    /// The environment of a client-plane request: the one named, else ``served``.
    public func forReading(_ named: String?) throws(RolloutError) -> EnvironmentName {
        try resolve(named, fallback: served)
    }

    /// The environment of a client-plane request from `?environment=` (which wins) and `Tabs-Environment`, and
    /// whether the answer's `Vary` must name `Tabs-Environment`: whenever the header could have chosen another
    /// environment, that is with more than one environment and no query parameter.
    /// - Throws: ``RolloutError/unknownEnvironment(_:)`` (404).
    public func forReading(query: String?, header: String?) throws(RolloutError) -> (environment: EnvironmentName, varyOnHeader: Bool) {
        if let query, !query.isEmpty { return (try forReading(query), false) }
        return (try forReading(header), names.count > 1)
    }

    /// The environments that point at `version` now, in promotion order (the `"environments"` of a version in
    /// `…/versions`).
    public func pointing(at version: Int, _ pointers: [EnvironmentName: Pointer]) -> [EnvironmentName] {
        names.filter { pointers[$0]?.version == version }
    }

    /// The environments that have no pointer for an account, where `--configs` imports its file at start.
    public func lacking(_ pointers: [EnvironmentName: Pointer]) -> [EnvironmentName] {
        names.filter { pointers[$0] == nil }
    }

    /// The environment of a management request (writes, history, rollouts): the one named, else ``entry``.
    public func forManaging(_ named: String?) throws(RolloutError) -> EnvironmentName {
        try resolve(named, fallback: entry)
    }

    /// Whether the list is the default one, where environments are invisible (no `Vary: Tabs-Environment`, no
    /// `"environments"` in listings would be needed).
    public var isDefault: Bool { self == .default }
}

extension Substring {
    func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
