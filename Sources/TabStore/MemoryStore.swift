import Synchronization

/// A store in memory, for trials and tests: the same semantics as SQLite, gone at exit.
public final class MemoryStore: TabStore {
    private struct State {
        var layouts: [String: [StoredVersion]] = [:]
        var strings: [String: [StoredStrings]] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func currentLayouts() async throws(StoreError) -> [StoredVersion] {
        state.withLock { state in
            state.layouts.values.compactMap { $0.last }.filter { !$0.deleted }.sorted { $0.account < $1.account }
        }
    }

    public func latest(account: String) async throws(StoreError) -> StoredVersion? {
        state.withLock { $0.layouts[account]?.last }
    }

    public func versions(account: String) async throws(StoreError) -> [StoredVersion] {
        state.withLock { ($0.layouts[account] ?? []).reversed() }
    }

    public func version(account: String, number: Int) async throws(StoreError) -> StoredVersion? {
        state.withLock { $0.layouts[account]?.first { $0.version == number } }
    }

    public func append(_ write: LayoutWrite) async throws(StoreError) -> StoredVersion {
        try state.withLock { (state) throws(StoreError) -> StoredVersion in
            let latest = state.layouts[write.account]?.last
            try write.precondition.check(current: latest.flatMap { $0.deleted ? nil : $0.etag })
            let record = StoredVersion.next(after: latest, for: write)
            state.layouts[write.account, default: []].append(record)
            return record
        }
    }

    public func delete(account: String, precondition: WritePrecondition, author: String?) async throws(StoreError) -> StoredVersion {
        try state.withLock { (state) throws(StoreError) -> StoredVersion in
            guard let latest = state.layouts[account]?.last, !latest.deleted else { throw .notFound }
            try precondition.check(current: latest.etag)
            let record = StoredVersion.deletion(after: latest, author: author)
            state.layouts[account, default: []].append(record)
            return record
        }
    }

    public func currentStrings() async throws(StoreError) -> [StoredStrings] {
        state.withLock { $0.strings.values.compactMap(\.last).sorted { $0.locale < $1.locale } }
    }

    public func appendStrings(
        locale: String, source: [UInt8], contentType: String, precondition: WritePrecondition, author: String?
    ) async throws(StoreError) -> StoredStrings {
        try state.withLock { (state) throws(StoreError) -> StoredStrings in
            let latest = state.strings[locale]?.last
            try precondition.check(current: latest?.etag)
            let record = StoredStrings.next(after: latest, locale: locale, source: source, contentType: contentType, author: author)
            state.strings[locale, default: []].append(record)
            return record
        }
    }

    public func ping() async -> Bool { true }
}
