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
            let number = (latest?.version ?? 0) + 1
            let record = StoredVersion(
                account: write.account, version: number, source: write.source, contentType: write.contentType,
                etag: StoredVersion.makeETag(account: write.account, version: number, contentType: write.contentType, source: write.source),
                createdAtMillis: nowMillis(), author: write.author, message: write.message,
                restoredFrom: write.restoredFrom, deleted: false)
            state.layouts[write.account, default: []].append(record)
            return record
        }
    }

    public func delete(account: String, precondition: WritePrecondition, author: String?) async throws(StoreError) -> StoredVersion {
        try state.withLock { (state) throws(StoreError) -> StoredVersion in
            guard let latest = state.layouts[account]?.last, !latest.deleted else { throw .notFound }
            try precondition.check(current: latest.etag)
            var record = latest
            record.version = latest.version + 1
            record.etag = StoredVersion.makeETag(account: account, version: record.version, contentType: "deleted", source: [])
            record.createdAtMillis = nowMillis()
            record.author = author
            record.message = nil
            record.restoredFrom = nil
            record.deleted = true
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
            let number = (latest?.version ?? 0) + 1
            let record = StoredStrings(
                locale: locale, version: number, source: source, contentType: contentType,
                etag: StoredVersion.makeETag(account: "strings/" + locale, version: number, contentType: contentType, source: source),
                createdAtMillis: nowMillis(), author: author)
            state.strings[locale, default: []].append(record)
            return record
        }
    }

    public func ping() async -> Bool { true }
}
