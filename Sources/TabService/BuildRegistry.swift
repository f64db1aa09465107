import Synchronization
import TabBuilds
import TabLayout
import TabStore

/// The declared builds this replica knows (reloaded from the store after each change here and every minute), and
/// when clients of each were seen, noted on the read path at the cost of one atomic load when none is declared and
/// one lookup when some are, and written to the store once a minute.
final class BuildRegistry: Sendable {
    private struct State {
        var builds: [BuildID: Build] = [:]
        /// Minute stamps noted since the last flush.
        var seen: [BuildID: Int64] = [:]
    }

    private let state = Mutex(State())
    private let any = Atomic<Bool>(false)

    /// Replaces what is known with the store's builds (declarations the store could not read are skipped).
    func replace(with stored: [StoredBuild]) {
        var builds: [BuildID: Build] = [:]
        for row in stored {
            guard let build = Self.build(row) else { continue }
            builds[build.id] = build
        }
        state.withLock { $0.builds = builds }
        any.store(!builds.isEmpty, ordering: .releasing)
    }

    /// A stored row as a build.
    static func build(_ row: StoredBuild) -> Build? {
        guard let id = try? BuildID(platform: row.platform, appVersion: row.appVersion),
            let spec = try? BuildSpec.decode(row.spec)
        else { return nil }
        return Build(
            id: id, viewControllers: spec.viewControllers, images: spec.images, note: spec.note, declaredAtMillis: row.declaredAtMillis,
            declaredBy: row.declaredBy, lastSeenMillis: row.lastSeenMillis)
    }

    /// Every declared build, in order.
    var all: [Build] { state.withLock { Array($0.builds.values) }.sorted { $0.id < $1.id } }

    /// The declared build a client names, nil when it is not declared (or names no platform or version).
    func declared(platform: Platform?, appVersion: AppVersion?) -> Build? {
        guard let platform, let appVersion, any.load(ordering: .acquiring) else { return nil }
        return state.withLock { $0.builds[BuildID(platform: platform, appVersion: appVersion)] }
    }

    /// Notes that a client of `build` asked at `millis` (kept to the minute).
    func noteSeen(_ build: Build, atMillis millis: Int64) {
        let minute = millis - millis % 60_000
        state.withLock { state in
            if (state.seen[build.id] ?? 0) < minute { state.seen[build.id] = minute }
        }
    }

    /// The sightings noted since the last call, for the store.
    func takeSeen() -> [(platform: String, appVersion: String, atMillis: Int64)] {
        state.withLock { state in
            defer { state.seen = [:] }
            return state.seen.map { (platform: $0.key.platform.rawValue, appVersion: $0.key.appVersion.description, atMillis: $0.value) }
        }
    }
}
