import Synchronization
import TabBuilds
import TabLayout
import TabStore

/// The declared builds this replica knows (reloaded from the store after each change here and every minute), and
/// when clients of each were seen, noted on the read path at the cost of one atomic load when none is declared and
/// one lookup when some are, and written to the store once a minute.
final class BuildRegistry: Sendable {
    /// A declared build and its variant-cache slot (1 and up; 0 is "no declared build"): one per declaration, never
    /// reused, so that representations trimmed for an old declaration are not served for a new one.
    struct Declared: Sendable {
        let build: Build
        let slot: UInt16
    }

    private struct State {
        var builds: [BuildID: Declared] = [:]
        var slots: [String: UInt16] = [:]
        /// Minute stamps noted since the last flush.
        var seen: [BuildID: Int64] = [:]
        /// Answers that held tabs back, per build (`tabserver_tabs_withheld_total`).
        var withheld: [BuildID: Int] = [:]
    }

    private let state = Mutex(State())
    private let any = Atomic<Bool>(false)

    /// Replaces what is known with the store's builds (declarations the store could not read are skipped).
    func replace(with stored: [StoredBuild]) {
        state.withLock { state in
            state.builds = [:]
            for row in stored {
                guard let build = Self.build(row) else { continue }
                let key = "\(build.id) " + String(decoding: row.spec, as: UTF8.self)
                let slot = state.slots[key] ?? UInt16(truncatingIfNeeded: state.slots.count + 1)
                state.slots[key] = slot
                state.builds[build.id] = Declared(build: build, slot: slot)
            }
            any.store(!state.builds.isEmpty, ordering: .releasing)
        }
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
    var all: [Build] { state.withLock { $0.builds.values.map(\.build) }.sorted { $0.id < $1.id } }

    /// Whether no build is declared (then representations need not vary on platform and app version for builds).
    var isEmpty: Bool { !any.load(ordering: .acquiring) }

    /// The declared build a client names, nil when it is not declared (or names no platform or version).
    func declared(platform: Platform?, appVersion: AppVersion?) -> Declared? {
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

    /// When a client of `id` was seen since the last flush (nil when none was).
    func pendingSeen(_ id: BuildID) -> Int64? { state.withLock { $0.seen[id] } }

    /// The sightings noted since the last call, for the store.
    func takeSeen() -> [(platform: String, appVersion: String, atMillis: Int64)] {
        state.withLock { state in
            defer { state.seen = [:] }
            return state.seen.map { (platform: $0.key.platform.rawValue, appVersion: $0.key.version, atMillis: $0.value) }
        }
    }

    /// Counts an answer to `build` that held tabs back.
    func countWithheld(_ build: Build) { state.withLock { $0.withheld[build.id, default: 0] += 1 } }

    /// `tabserver_tabs_withheld_total` lines.
    var withheldLines: [String] {
        state.withLock { state in
            state.withheld.sorted { $0.key < $1.key }.map {
                "tabserver_tabs_withheld_total{platform=\"\($0.key.platform.rawValue)\",app_version=\"\($0.key.version)\"} \($0.value)"
            }
        }
    }
}
