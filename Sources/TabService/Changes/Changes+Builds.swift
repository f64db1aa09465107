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

    /// Stores `build`'s declaration (a new one, or one that replaces the build's) and reloads the builds: 201 or 200
    /// with the build.
    func declare(_ build: Build) async -> HTTPResponse {
        // A new build past `--max-builds` is refused (the store's count: every replica's declarations).
        if !builds.all.contains(where: { $0.id == build.id }) {
            do throws(StoreError) {
                let declared = try await store.builds()
                if declared.count >= maxBuilds,
                    !declared.contains(where: { $0.platform == build.id.platform.rawValue && $0.appVersion == build.id.version })
                {
                    return Problem(
                        .tooManyBuilds, detail: "\(declared.count) builds are declared, the most --max-builds allows; retire one first"
                    ).response
                }
            } catch {
                return storeProblem(error)
            }
        }
        let stored = StoredBuild(
            platform: build.id.platform.rawValue, appVersion: build.id.version, spec: build.specJSON,
            declaredAtMillis: build.declaredAtMillis, declaredBy: build.declaredBy, lastSeenMillis: nil)
        do throws(StoreError) {
            let replaced = try await store.declare(
                build: stored, audit: AuditContext.current?.entry(action: "build.declare", account: nil, status: 201))
            try await reloadBuilds()
            let known = builds.all.first { $0.id == build.id } ?? build
            return json(replaced ? 200 : 201, buildObject(known))
        } catch {
            return storeProblem(error)
        }
    }

    /// Retires `id` and reloads the builds: 204, or 404 when it is not declared.
    func retire(_ id: BuildID) async -> HTTPResponse {
        do throws(StoreError) {
            guard
                try await store.retireBuild(
                    platform: id.platform.rawValue, appVersion: id.version,
                    audit: AuditContext.current?.entry(action: "build.retire", account: nil, status: 204))
            else { return Problem.undeclaredBuild(id).response }
            try await reloadBuilds()
            return HTTPResponse(status: 204)
        } catch {
            return storeProblem(error)
        }
    }

    /// The protected environment whose review a change to the builds waits for (the one needing the most approvals,
    /// the first of them), and how many; nil when none is protected or the change bypasses review. A build's
    /// declaration is one for every environment, so it waits for the strictest.
    func buildReview(_ options: WriteOptions) -> (environment: EnvironmentName, required: Int)? {
        var strictest: (environment: EnvironmentName, required: Int)?
        for name in environments.names {
            guard let required = reviewRequired(in: name, options) else { continue }
            if required > (strictest?.required ?? 0) { strictest = (name, required) }
        }
        return strictest
    }

    /// Whether declaring `build` changes what a live build gets: a build not declared before, or one whose view
    /// controllers or images change (the note alone changes nothing a client gets).
    func declarationChangesAnswers(_ build: Build) -> Bool {
        guard let known = builds.all.first(where: { $0.id == build.id }) else { return true }
        return known.viewControllers != build.viewControllers || known.images != build.images
    }

    /// Whether retiring `id` changes what a live build gets: the build is declared and live (the clients of a build
    /// that is not live are none).
    func retirementChangesAnswers(_ id: BuildID) -> Bool {
        builds.all.first { $0.id == id }?.isLive(at: clock.unixMillis, liveDays: buildLiveDays) ?? false
    }

    /// `{"platform", "appVersion", "viewControllers", "images", "note", "declaredAt", "declaredBy", "lastSeenAt", "live"}`
    /// (`images`, `note` and `lastSeenAt` left out when the build has none).
    func buildObject(_ build: Build) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "platform": .string(build.id.platform.rawValue), "appVersion": .string(build.id.version),
            "viewControllers": .array(build.viewControllers.sorted().map(JSONValue.string)),
            "declaredAt": .string(Timestamp(unixMillis: build.declaredAtMillis).rfc3339), "declaredBy": .string(build.declaredBy),
            "live": .bool(build.isLive(at: clock.unixMillis, liveDays: buildLiveDays)),
        ]
        object["images"] = build.images.map { .array($0.sorted().map(JSONValue.string)) }
        object["note"] = build.note.map(JSONValue.string)
        object["lastSeenAt"] = build.lastSeenMillis.map { .string(Timestamp(unixMillis: $0).rfc3339) }
        return object
    }
}
