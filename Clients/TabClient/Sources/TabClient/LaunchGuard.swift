import Foundation

/// What the launch guard keeps in the cache file, under `"guard"`, written atomically with the layout:
/// `{"pending":n,"launches":k,"blocked":[…],"revoked":[…],"gone":[…]}` (each member only when it holds something).
///
/// A layout newly shown from the network, a prefetch or a switch is *pending* until the app calls
/// ``TabClient/markRendered()``. A launch (a new client over the same cache directory) that finds it still pending counts
/// one more launch that ended before it; at ``TabClientConfiguration/launchAttempts`` such launches, or after
/// ``TabClientConfiguration/readyTimeout`` in one run, the client goes back to the last layout that rendered (else the
/// bundle) and **blocks** that version: it is never shown again, from the network, the cache, a prefetch or a switch.
/// The bundle's own version is never blocked (it is the floor), and a revert never starts another one: what the client
/// goes back to is never pending.
///
/// While a layout is pending, the file also keeps, after its `"layout"`, `"previous"`: the cache entry (etag, signature,
/// layout) of the last layout that rendered, which a revert makes the file's layout again (at launch too).
///
/// `revoked` holds the versions the server said are revoked (the manifest's `"revoked"`, the `Tabs-Revoked` header, a
/// `410 Gone` to `…/tabs?version=N`): never shown either, and dropped at once when shown.
struct GuardRecord: Sendable, Equatable, Codable {
    /// The version shown and not rendered yet.
    var pending: Int?
    /// The launches that ended with ``pending`` not rendered (the one that showed it counts).
    var launches: Int?
    var blocked: [Int]?
    var revoked: [Int]?
    /// The versions of ``revoked`` learnt from a `410 Gone` to `…/tabs?version=N` that the server's lists have not named yet.
    var gone: [Int]?

    /// At most this many versions are kept blocked (and revoked): the oldest go first.
    static let limit = 32

    var isEmpty: Bool { pending == nil && (blocked ?? []).isEmpty && (revoked ?? []).isEmpty && (gone ?? []).isEmpty }

    /// Whether `version` must not be shown.
    func refuses(_ version: Int?) -> Bool {
        guard let version else { return false }
        return (blocked ?? []).contains(version) || (revoked ?? []).contains(version)
    }

    /// Adds `version` to the blocked list (at most ``limit``, the oldest dropped).
    mutating func block(_ version: Int) {
        var list = (blocked ?? []).filter { $0 != version }
        list.append(version)
        blocked = Array(list.suffix(Self.limit))
    }

    /// Replaces the revoked list with the server's newest (at most ``limit``), keeping the versions ``gone`` it does not
    /// name yet: a list the server made before a version's revoke must not bring it back. A version the list names leaves
    /// ``gone`` (the server's lists speak for it from now on, an un-revoke too). Returns whether it changed.
    mutating func setRevoked(_ versions: [Int]) -> Bool {
        let stillGone = (gone ?? []).filter { !versions.contains($0) }
        let list = Array((versions + stillGone).suffix(Self.limit))
        let nowRevoked = list.isEmpty ? nil : list
        let nowGone = stillGone.isEmpty ? nil : stillGone
        guard nowRevoked != revoked || nowGone != gone else { return false }
        revoked = nowRevoked
        gone = nowGone
        return true
    }

    /// Adds `version` to the revoked list and to ``gone`` (at most ``limit``, the oldest dropped): what a `410 Gone` to
    /// `…/tabs?version=N` says of it. Returns whether it changed.
    mutating func markGone(_ version: Int) -> Bool {
        guard !(gone ?? []).contains(version) else { return false }
        gone = Array(((gone ?? []) + [version]).suffix(Self.limit))
        revoked = Array(((revoked ?? []).filter { $0 != version } + [version]).suffix(Self.limit))
        return true
    }

    /// `,"guard":{…}` to append to a cache file, or nothing when the record is empty.
    var fragment: Data {
        guard !isEmpty, let encoded = try? Self.encoder.encode(self) else { return Data() }
        return Data(#","guard":"#.utf8) + encoded
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// The versions of a `Tabs-Revoked: 5, 7` header (nil when absent; what does not parse is skipped).
    static func revoked(header: String?) -> [Int]? {
        guard let header else { return nil }
        return header.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
}

/// What the launch guard decides at launch about the cache file's pending layout: a pure function of the record, the
/// version the file holds and the configuration.
enum LaunchVerdict: Equatable {
    /// Nothing pending: show the file's layout.
    case show
    /// Still pending: show it, and count this launch (the record to write).
    case count(GuardRecord)
    /// Pending through `launchAttempts` launches: go back and block it (the record to write).
    case revert(version: Int, record: GuardRecord)

    static func at(launch record: GuardRecord, holding version: Int?, bundleVersion: Int?, attempts: Int) -> LaunchVerdict {
        guard attempts > 0, let pending = record.pending, pending == version else { return .show }
        let ended = record.launches ?? 1
        if ended >= attempts, pending != bundleVersion {
            var next = record
            next.pending = nil
            next.launches = nil
            next.block(pending)
            return .revert(version: pending, record: next)
        }
        var next = record
        next.launches = ended + 1
        return .count(next)
    }
}

extension LayoutCache {
    /// The guard record of the cache file (empty when there is none, or no file).
    func loadGuard() -> GuardRecord {
        guard let data = FileManager.default.contents(atPath: file.path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let member = object["guard"],
            let encoded = try? JSONSerialization.data(withJSONObject: member),
            let record = try? JSONDecoder().decode(GuardRecord.self, from: encoded)
        else { return GuardRecord() }
        return record
    }

    /// Whether the file holds a guard record and no layout (what a revert to the bundle leaves).
    func holdsOnlyGuard() -> Bool {
        guard let data = FileManager.default.contents(atPath: file.path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return false }
        return object["layout"] == nil && object["guard"] != nil
    }

    /// The file's bytes as an entry without its guard record and its `"previous"` (nil: no file, or no layout in it).
    func entryBytes() -> Data? {
        guard let data = FileManager.default.contents(atPath: file.path) else { return nil }
        return Self.strip(data)
    }

    /// `data` (a cache file as ``store(body:etag:perInstall:signature:revision:)`` writes it) without its guard record and
    /// its `"previous"`; nil when it is not in that form.
    static func strip(_ data: Data) -> Data? {
        guard let layout = data.range(of: Data(#","layout":{"#.utf8)) else { return nil }
        var head = Data(data[..<layout.lowerBound])
        if let start = head.range(of: Data(#","guard":{"#.utf8)), let end = head[start.upperBound...].firstIndex(of: UInt8(ascii: "}")) {
            head.removeSubrange(start.lowerBound...end)
        }
        var tail = Data(data[layout.lowerBound...])
        if let previous = tail.range(of: Data(#","previous":{"etag":"#.utf8), options: .backwards) {
            tail = Data(tail[..<previous.lowerBound]) + Data("}".utf8)
        }
        return head + tail
    }

    /// The file's `"previous"` (the last layout that rendered), as the bytes of a cache file's entry; nil when none.
    func previousBytes() -> Data? {
        guard let data = FileManager.default.contents(atPath: file.path),
            let start = data.range(of: Data(#","previous":{"etag":"#.utf8), options: .backwards)
        else { return nil }
        let entry = Data(data[data.index(start.lowerBound, offsetBy: #","previous":"#.utf8.count)...])
        return entry.count > 1 ? Data(entry.dropLast()) : nil
    }

    /// Makes `entry` (a cache file's bytes) the file again, with `record`, atomically: what a revert to the last layout
    /// that rendered writes.
    func restore(_ entry: Data, record: GuardRecord) throws(TabClientError) {
        guard let layout = entry.range(of: Data(#","layout":{"#.utf8)) else { return }
        try writeAtomically(Data(entry[..<layout.lowerBound]) + record.fragment + entry[layout.lowerBound...])
    }

    /// Writes `record` into the cache file, keeping its layout (`dropLayout`: without it, the bundle shown), atomically.
    /// A file as ``store(body:etag:perInstall:signature:revision:)`` writes it keeps its bytes but for the record (which
    /// stands just before the top-level `"layout"`, and holds no object); another is written again from its JSON. No file
    /// is left for an empty record and no layout.
    func storeGuard(_ record: GuardRecord, dropLayout: Bool = false) throws(TabClientError) {
        let data = dropLayout ? nil : FileManager.default.contents(atPath: file.path)
        if let data, let layout = data.range(of: Data(#","layout":{"#.utf8)) {
            var head = Data(data[..<layout.lowerBound])
            if let start = head.range(of: Data(#","guard":{"#.utf8)),
                let end = head[start.upperBound...].firstIndex(of: UInt8(ascii: "}"))
            {
                head.removeSubrange(start.lowerBound...end)
            }
            var tail = Data(data[layout.lowerBound...])
            // Nothing pending: the last layout that rendered is the one stored, and its copy goes.
            if record.pending == nil, let previous = tail.range(of: Data(#","previous":{"etag":"#.utf8), options: .backwards) {
                tail = Data(tail[..<previous.lowerBound]) + Data("}".utf8)
                self.previous.withLock { $0 = nil }
            }
            try writeAtomically(head + record.fragment + tail)
            return
        }
        var object: [String: Any] = [:]
        if let data, let read = try? JSONSerialization.jsonObject(with: data) as? [String: Any], read["layout"] != nil {
            object = read
        }
        object["guard"] = nil
        if object.isEmpty, record.isEmpty {
            remove()
            return
        }
        var document: Data
        do {
            document = object.isEmpty ? Data("{}".utf8) : try JSONSerialization.data(withJSONObject: object)
        } catch {
            throw .cacheWriteFailed(path: file.path, reason: "\(error)")
        }
        let fragment = record.fragment
        if !fragment.isEmpty {
            // `{…}` becomes `{…,"guard":{…}}` (or `{"guard":{…}}`).
            document.removeLast()
            document.append(object.isEmpty ? fragment.dropFirst() : fragment)
            document.append(Data("}".utf8))
        }
        try writeAtomically(document)
    }
}
