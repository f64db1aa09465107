import Synchronization
import TabBuilds
import TabLayout
import TabStore

/// The declared builds this replica knows (reloaded from the store after each change here and every minute), and
/// when clients of each were seen, noted on the read path at the cost of one atomic load when none is declared and
/// one lookup when some are, and written to the store once a minute.
final class BuildRegistry: Sendable {
    /// A declared build and its variant-cache slot (1 and up; 0 is "no declared build"): one per declaration, never
    /// reused (a 64-bit counter that only grows), so that representations trimmed for an old declaration are not
    /// served for a new one.
    struct Declared: Sendable {
        let build: Build
        let slot: UInt64
        /// Its sightings and withheld answers, counted without a lock.
        let sightings: Sightings
    }

    /// What the read path notes of one build: atomics, so that a declared build's answer takes no lock for them.
    final class Sightings: Sendable {
        /// The minute a client of the build last asked (Unix milliseconds, a whole minute), 0 when never.
        let lastMinute = Atomic<Int64>(0)
        /// Answers that held tabs back (`tabserver_tabs_withheld_total`).
        let withheld = Atomic<Int>(0)
    }

    private struct State {
        var builds: [BuildID: Declared] = [:]
        /// The slot of each current declaration (its build and spec): only those the store holds now, so that memory
        /// follows the declarations, not their history.
        var slots: [String: UInt64] = [:]
        /// The last slot given.
        var lastSlot: UInt64 = 0
        /// Per build ever declared here, kept across reloads.
        var sightings: [BuildID: Sightings] = [:]
        /// The minute stamp of each build last written to the store.
        var flushed: [BuildID: Int64] = [:]
    }

    private let state = Mutex(State())
    private let any = Atomic<Bool>(false)

    /// Replaces what is known with the store's builds (declarations the store could not read are skipped).
    func replace(with stored: [StoredBuild]) {
        state.withLock { state in
            state.builds = [:]
            var slots: [String: UInt64] = [:]
            for row in stored {
                guard let build = Self.build(row) else { continue }
                let key = "\(build.id) " + String(decoding: row.spec, as: UTF8.self)
                let slot: UInt64
                if let known = state.slots[key] {
                    slot = known
                } else {
                    state.lastSlot += 1
                    slot = state.lastSlot
                }
                slots[key] = slot
                let sightings = state.sightings[build.id] ?? Sightings()
                state.sightings[build.id] = sightings
                state.builds[build.id] = Declared(build: build, slot: slot, sightings: sightings)
            }
            state.slots = slots
            state.sightings = state.sightings.filter { state.builds[$0.key] != nil }
            state.flushed = state.flushed.filter { state.builds[$0.key] != nil }
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

    /// Notes that a client of `declared` asked at `millis` (kept to the minute) and whether its answer held tabs
    /// back: two atomics, no lock.
    func note(_ declared: Declared, atMillis millis: Int64, withheld: Bool) {
        let minute = millis - millis % 60_000
        if declared.sightings.lastMinute.load(ordering: .relaxed) < minute {
            declared.sightings.lastMinute.max(minute, ordering: .relaxed)
        }
        if withheld { declared.sightings.withheld.add(1, ordering: .relaxed) }
    }

    /// When a client of `id` was seen since the last flush (nil when none was).
    func pendingSeen(_ id: BuildID) -> Int64? {
        state.withLock { state in
            guard let minute = state.sightings[id]?.lastMinute.load(ordering: .relaxed), minute > (state.flushed[id] ?? 0) else {
                return nil
            }
            return minute
        }
    }

    /// The sightings noted since the last call, for the store.
    func takeSeen() -> [(platform: String, appVersion: String, atMillis: Int64)] {
        state.withLock { state in
            var seen: [(platform: String, appVersion: String, atMillis: Int64)] = []
            for (id, sightings) in state.sightings {
                let minute = sightings.lastMinute.load(ordering: .relaxed)
                guard minute > (state.flushed[id] ?? 0) else { continue }
                state.flushed[id] = minute
                seen.append((platform: id.platform.rawValue, appVersion: id.version, atMillis: minute))
            }
            return seen
        }
    }

    /// `tabserver_tabs_withheld_total` lines.
    var withheldLines: [String] {
        state.withLock { state in
            state.sightings.sorted { $0.key < $1.key }.compactMap { id, sightings in
                let count = sightings.withheld.load(ordering: .relaxed)
                guard count > 0 else { return nil }
                return "tabserver_tabs_withheld_total{platform=\"\(id.platform.rawValue)\",app_version=\"\(id.version)\"} \(count)"
            }
        }
    }
}
