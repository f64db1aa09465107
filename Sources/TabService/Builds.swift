import MicroHTTPD
import TabAccess
import TabBuilds
import TabDelivery
import TabLayout
import TabStore

/// "App builds: a layout every live build can open" (docs/builds.md): the routes, the gate before a change moves
/// what apps get, and the build's JSON.
extension TabService {
    static let buildAnswer = """
        description: The build.
        content:
          application/json: {schema: {type: object, required: [platform, appVersion, viewControllers, declaredAt, declaredBy, live]}}
        """

    static let buildRoutes: [Route<TabService>] = [
        Route(
            .get, "/v1/builds", .scoped(.read, .service), label: "builds",
            APIOperation(
                "Every declared build, with when a client of it was last seen and whether it is live.",
                responses: [
                    (
                        200,
                        """
                        description: The builds.
                        content:
                          application/json: {schema: {type: object, required: [builds], properties: {builds: {type: array, items: {type: object}}}}}
                        """
                    ), (503, APIOperation.problem),
                ])
        ) { service, _, _ in service.listBuildsRoute() },
        Route(
            .put, "/v1/builds/{platform}/{appVersion}", .scoped(.deploy, .service), label: "build",
            APIOperation(
                "Declare a build: the view controllers it registers (and the images it ships).",
                requestBody: """
                    required: true
                    content:
                      application/json:
                        schema:
                          type: object
                          required: [viewControllers]
                          properties:
                            viewControllers: {type: array, maxItems: 2000, items: {type: string, maxLength: 128}}
                            images: {type: array, maxItems: 2000, items: {type: string, maxLength: 128}}
                            note: {type: string, maxLength: 1024}
                    """,
                responses: [
                    (200, buildAnswer), (201, buildAnswer), (404, APIOperation.problem), (415, APIOperation.problem),
                    (422, APIOperation.problem), (503, APIOperation.problem), (507, APIOperation.problem),
                ])
        ) { service, request, match in service.declareBuildRoute(request, match) },
        Route(
            .get, "/v1/builds/{platform}/{appVersion}", .scoped(.read, .service), label: "build",
            APIOperation("One declared build.", responses: [(200, buildAnswer), (404, APIOperation.problem), (503, APIOperation.problem)])
        ) { service, _, match in service.readBuildRoute(match) },
        Route(
            .delete, "/v1/builds/{platform}/{appVersion}", .scoped(.deploy, .service), label: "build",
            APIOperation(
                "Retire a build: the gate no longer checks it and its clients get every tab.",
                responses: [(204, "{description: Retired.}"), (404, APIOperation.problem), (503, APIOperation.problem)])
        ) { service, _, match in service.retireBuildRoute(match) },
    ]

    /// The build a path names; 404 for a platform or version that is not one (no such build can exist).
    private func buildID(_ match: RouteMatch) -> Result<BuildID, ProblemError> {
        do throws(BuildError) {
            return .success(try BuildID(platform: match["platform"], appVersion: match["appVersion"]))
        } catch {
            return .failure(ProblemError(Problem.notFound(error.description)))
        }
    }

    /// Runs `body` with the build a path names, or answers its 404.
    private func withBuildID(_ match: RouteMatch, _ body: (BuildID) -> HTTPReply) -> HTTPReply {
        switch buildID(match) {
        case .success(let id): body(id)
        case .failure(let problem): .response(problem.response)
        }
    }

    func declareBuildRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) -> HTTPReply {
        let id: BuildID
        switch buildID(match) {
        case .success(let named): id = named
        case .failure(let problem): return .response(problem.response)
        }
        guard mediaType(request.header("Content-Type") ?? "") == "application/json" else { return unsupportedMediaType() }
        let spec: BuildSpec
        do throws(BuildError) {
            spec = try BuildSpec.decode(request.body)
        } catch {
            return .response(Self.buildProblem(error).response)
        }
        let build = Build(
            id: id, viewControllers: spec.viewControllers, images: spec.images, note: spec.note, declaredAtMillis: currentTimeMillis(),
            declaredBy: match.author)
        let stored = StoredBuild(
            platform: id.platform.rawValue, appVersion: id.version, spec: build.specJSON,
            declaredAtMillis: build.declaredAtMillis, declaredBy: build.declaredBy, lastSeenMillis: nil)
        return .deferred {
            do throws(StoreError) {
                let replaced = try await self.store.declare(
                    build: stored, audit: AuditContext.current?.entry(action: "build.declare", account: nil, status: 201))
                try await self.reloadBuilds()
                let known = self.builds.all.first { $0.id == id } ?? build
                return json(replaced ? 200 : 201, self.buildObject(known))
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    func listBuildsRoute() -> HTTPReply {
        .deferred {
            do throws(StoreError) {
                let builds = try await self.store.builds().compactMap(BuildRegistry.build)
                return json(200, ["builds": .array(builds.map { .object(self.buildObject(self.seenNow($0))) })])
            } catch {
                return self.storeProblem(error)
            }
        }
    }

    func readBuildRoute(_ match: RouteMatch) -> HTTPReply {
        withBuildID(match) { id in
            .deferred {
                do throws(StoreError) {
                    guard let build = try await self.store.builds().compactMap(BuildRegistry.build).first(where: { $0.id == id }) else {
                        return Problem.notFound("build \(id) is not declared").response
                    }
                    return json(200, self.buildObject(self.seenNow(build)))
                } catch {
                    return self.storeProblem(error)
                }
            }
        }
    }

    func retireBuildRoute(_ match: RouteMatch) -> HTTPReply {
        withBuildID(match) { id in
            .deferred {
                do throws(StoreError) {
                    guard
                        try await self.store.retireBuild(
                            platform: id.platform.rawValue, appVersion: id.version,
                            audit: AuditContext.current?.entry(action: "build.retire", account: nil, status: 204))
                    else { return Problem.notFound("build \(id) is not declared").response }
                    try await self.reloadBuilds()
                    return HTTPResponse(status: 204)
                } catch {
                    return self.storeProblem(error)
                }
            }
        }
    }

    /// `build` with the sightings of this replica not yet written to the store.
    private func seenNow(_ build: Build) -> Build {
        var build = build
        if let pending = builds.pendingSeen(build.id), pending > (build.lastSeenMillis ?? 0) { build.lastSeenMillis = pending }
        return build
    }

    /// `{"platform", "appVersion", "viewControllers", "images", "note", "declaredAt", "declaredBy", "lastSeenAt", "live"}`
    /// (`images`, `note` and `lastSeenAt` left out when the build has none).
    func buildObject(_ build: Build) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "platform": .string(build.id.platform.rawValue), "appVersion": .string(build.id.version),
            "viewControllers": .array(build.viewControllers.sorted().map(JSONValue.string)),
            "declaredAt": .string(Timestamp(unixMillis: build.declaredAtMillis).rfc3339), "declaredBy": .string(build.declaredBy),
            "live": .bool(build.isLive(at: currentTimeMillis(), liveDays: configuration.buildLiveDays)),
        ]
        object["images"] = build.images.map { .array($0.sorted().map(JSONValue.string)) }
        object["note"] = build.note.map(JSONValue.string)
        object["lastSeenAt"] = build.lastSeenMillis.map { .string(Timestamp(unixMillis: $0).rfc3339) }
        return object
    }

    static func buildProblem(_ error: BuildError) -> Problem {
        switch error {
        case .unknownPlatform, .notAVersion: return Problem.notFound(error.description)
        case .notJSON: return Problem.badRequest(error.description)
        case .invalidBody(let problems):
            return Problem(
                .invalidFields, detail: "the build has \(problems.count) problem\(problems.count == 1 ? "" : "s") (see errors)",
                errors: problems.map { FieldError(pointer: $0.pointer, line: nil, message: $0.message) })
        }
    }

    /// Reads the builds from the store into ``builds`` (after a change here, and every minute for other replicas');
    /// when the declarations changed, every cached representation goes (each is trimmed and varies by them).
    func reloadBuilds() async throws(StoreError) {
        let before = builds.all
        builds.replace(with: try await store.builds())
        guard builds.all.map(\.specJSON) != before.map(\.specJSON) || builds.all.map(\.id) != before.map(\.id) else { return }
        let top = snapshot
        var dropped = 0
        var lazy = top.everyRollout.flatMap { [$0.stable, $0.candidate] }
        for environment in [top] + Array(top.contents.environments.values) { lazy += environment.entries.values }
        for entry in lazy { dropped += entry.resolved?.dropAll() ?? 0 }
        budget.evictions.add(dropped, ordering: .relaxed)
        budget.swept()  // answers remembered before may hold a representation dropped here
    }

    /// Every minute: what clients were seen goes to the store, and the builds other replicas declared come back.
    func followBuilds() {
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: .seconds(60))
                guard let self, !self.stopping.load(ordering: .relaxed) else { return }
                let seen = self.builds.takeSeen()
                if !seen.isEmpty { try? await self.store.markBuildsSeen(seen) }
                try? await self.reloadBuilds()
            }
        }
    }

    // MARK: The gate

    /// The tabs each live build would get from `layout` but could not open (read from the store, so that every
    /// replica's declarations count).
    func buildMisses(_ layout: ResolvedLayout) async throws(StoreError) -> [BuildMiss] {
        let now = currentTimeMillis()
        let live = try await store.builds().compactMap(BuildRegistry.build).filter {
            $0.isLive(at: now, liveDays: configuration.buildLiveDays)
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
}
