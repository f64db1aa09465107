import MicroHTTPD
import TabBuilds
import TabDelivery
import TabLayout
import TabStore

/// The builds gate (docs/builds.md): a change that moves what apps get is refused (422 `incompatible-build`) when a
/// live build could not open it; and the declarations this replica knows, reloaded from the store.
extension Changes {
    /// Reads the builds from the store into ``builds`` (after a change here, and every minute for other replicas');
    /// when the declarations changed, every cached representation goes (each is trimmed and varies by them).
    func reloadBuilds() async throws(StoreError) {
        let before = builds.all
        builds.replace(with: try await store.builds())
        guard builds.all.map(\.specJSON) != before.map(\.specJSON) || builds.all.map(\.id) != before.map(\.id) else { return }
        let top = publisher.snapshot
        var dropped = 0
        var lazy = top.everyRollout.flatMap { [$0.stable, $0.candidate] }
        for environment in [top] + Array(top.contents.environments.values) { lazy += environment.entries.values }
        for entry in lazy { dropped += entry.resolved?.dropAll() ?? 0 }
        budget.evictions.add(dropped, ordering: .relaxed)
        budget.swept()  // answers remembered before may hold a representation dropped here
    }

    /// The tabs each live build would get from `layout` but could not open (read from the store, so that every
    /// replica's declarations count).
    func buildMisses(_ layout: ResolvedLayout) async throws(StoreError) -> [BuildMiss] {
        let now = clock.unixMillis
        let live = try await store.builds().compactMap(BuildRegistry.build).filter {
            $0.isLive(at: now, liveDays: buildLiveDays)
        }
        return live.sorted { $0.id < $1.id }.flatMap { BuildGate.misses(layout, for: $0) }
    }

    /// The gate for a stored version about to be served in `environment` (a rollout's candidate, a promotion): 422
    /// `incompatible-build` when a live build could not open it, nil when every one can.
    func gate(account: String, version: Int, in environment: EnvironmentName) async -> HTTPResponse? {
        do throws(StoreError) {
            let misses = try await gateMisses(account: account, version: version, in: environment)
            return misses.isEmpty ? nil : Self.incompatible(misses).response
        } catch {
            return storeProblem(error)
        }
    }

    /// The tabs live builds could not open once `environment` serves `account`'s stored `version` (none for no
    /// version, a deletion, or a version that no longer reads: the write that stored it was checked).
    func gateMisses(account: String, version: Int?, in environment: EnvironmentName) async throws(StoreError) -> [BuildMiss] {
        guard let version, let record = try await store.version(account: account, number: version), !record.deleted,
            let document = try? LayoutSource.parse(record.source, format: sourceFormat(record.contentType)),
            let resolved = try? snapshot(for: environment).resolve(account, version: version, document: document, strict: false)
        else { return [] }
        return try await buildMisses(resolved)
    }

    /// 422 `incompatible-build`: one error per tab a live build cannot open.
    static func incompatible(_ misses: [BuildMiss]) -> Problem {
        let builds = Set(misses.map(\.build)).sorted().map(\.description)
        var problem = Problem(
            .incompatibleBuild,
            detail:
                "\(builds.count) live build\(builds.count == 1 ? "" : "s") (\(builds.joined(separator: ", "))) would get a tab they cannot open; target the tab (minAppVersion, platforms) or publish with ?allowIncompatible=true"
        )
        problem.extensions["errors"] = .array(
            misses.map { miss in
                .object([
                    "pointer": .string(miss.pointer), "message": .string(miss.message), "value": .string(miss.value),
                    "build": .object([
                        "platform": .string(miss.build.platform.rawValue), "appVersion": .string(miss.build.version),
                    ]),
                ])
            })
        return problem
    }

    /// The builds of `misses`, as `incompatibleBuilds` lists them.
    static func incompatibleBuilds(_ misses: [BuildMiss]) -> JSONValue {
        .array(
            Set(misses.map(\.build)).sorted().map {
                .object(["platform": .string($0.platform.rawValue), "appVersion": .string($0.version)])
            })
    }

    /// What clients were seen goes to the store, and the builds other replicas declared come back (each minute).
    func exchangeSightings() async {
        let seen = builds.takeSeen()
        if !seen.isEmpty { try? await store.markBuildsSeen(seen) }
        try? await reloadBuilds()
    }
}
