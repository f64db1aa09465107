/// At most ``limit`` values by key, those used recently kept: two generations of at most half the limit each. A value
/// found in the older generation moves to the newer; when the newer is full it becomes the older, and the older's
/// values (none used since the newer began) go. A value used again within half the limit's insertions stays.
struct RecentlyUsed<Value> {
    /// Values kept at most (2 or more).
    let limit: Int
    private var newer: [String: Value] = [:]
    private var older: [String: Value] = [:]

    init(limit: Int) {
        precondition(limit >= 2, "a recently-used table keeps two generations of at least one value each")
        self.limit = limit
    }

    /// Values kept now.
    var count: Int { newer.count + older.count }

    /// The value kept for `key`, marked as used now.
    mutating func value(for key: String) -> Value? {
        if let found = newer[key] { return found }
        guard let found = older.removeValue(forKey: key) else { return nil }
        insert(found, for: key)
        return found
    }

    /// Keeps `value` for `key`, replacing what was kept for it.
    mutating func insert(_ value: Value, for key: String) {
        older[key] = nil
        if newer[key] == nil, newer.count >= limit / 2 {
            older = newer
            newer = [:]
        }
        newer[key] = value
    }

    /// Forgets `key`.
    mutating func remove(_ key: String) {
        newer[key] = nil
        older[key] = nil
    }
}
