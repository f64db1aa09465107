import MicroHTTPD
import TabAccess
import TabBuilds
import TabDelivery
import TabLayout
import TabReview
import TabStore

/// "App builds: a layout every live build can open" (docs/builds.md): builds declared, listed, read and retired, and
/// the build's JSON (the gate before a change moves what apps get is ``Changes``'s).
struct BuildRoutes: RouteCollection {
    /// The builds gate and this replica's declared builds (``Changes/builds``), reloaded after each change here.
    let changes: Changes

    static let buildAnswer = APIOperation.json(
        "The build.", .object(required: ["platform", "appVersion", "viewControllers", "declaredAt", "declaredBy", "live"]))

    static let routes: [Route<BuildRoutes>] = [
        Route(
            .get, "/v1/builds", .scoped(.read, .service), label: "builds", touchesStore: true,
            APIOperation(
                "Every declared build, with when a client of it was last seen and whether it is live.",
                responses: [(200, APIOperation.json("The builds.", .object(["builds": .array(.anyObject)], required: ["builds"])))],
                problems: [503])
        ) { routes, _, _ in routes.listBuildsRoute() },
        Route(
            .put, "/v1/builds/{platform}/{appVersion}", .scoped(.deploy, .everything), label: "build", inputs: buildPath + reviewOptions,
            touchesStore: true,
            APIOperation(
                "Declare a build: the view controllers it registers (and the images it ships).",
                body: .object(
                    [
                        "viewControllers": .array(.string(maxLength: 128), maxItems: 2000),
                        "images": .array(.string(maxLength: 128), maxItems: 2000), "note": .string(maxLength: 1024),
                    ], required: ["viewControllers"]),
                responses: [
                    (200, buildAnswer), (201, buildAnswer), (202, ManagementRoutes.heldForReview),
                ], problems: [403, 404, 409, 415, 422, 503, 507])
        ) { routes, request, match throws(Problem) in try routes.declareBuildRoute(request, match) },
        Route(
            .get, "/v1/builds/{platform}/{appVersion}", .scoped(.read, .service), label: "build", inputs: buildPath, touchesStore: true,
            APIOperation("One declared build.", responses: [(200, buildAnswer)], problems: [404, 503])
        ) { routes, _, match in routes.readBuildRoute(match) },
        Route(
            .delete, "/v1/builds/{platform}/{appVersion}", .scoped(.deploy, .everything), label: "build",
            inputs: buildPath + reviewOptions, touchesStore: true,
            APIOperation(
                "Retire a build: the gate no longer checks it and its clients get every tab.",
                responses: [
                    (202, ManagementRoutes.heldForReview), (204, APIOperation.answer("Retired.")),
                ], problems: [403, 404, 422, 503])
        ) { routes, _, match throws(Problem) in try routes.retireBuildRoute(match) },
    ]

    /// `{platform}` and `{appVersion}`: 404 for a platform or version that is not one (no such build can exist).
    static let buildPath = [RouteInput.path("platform", BuildPlatform.self), RouteInput.path("appVersion", BuildVersion.self)]

    /// `?bypassApproval=true` and `Apply-At`, as layout writes take them: a change to the builds is held for review
    /// when a protected environment's answers would change (docs/change-requests.md).
    static let reviewOptions = Array(ManagementInputs.writeOptions.dropFirst())

    /// The build a path names.
    private func buildID(_ match: RouteMatch) -> BuildID {
        BuildID(
            platform: match.inputs.path("platform", as: BuildPlatform.self).platform,
            appVersion: match.inputs.path("appVersion", as: BuildVersion.self).version)
    }

    /// `PUT /v1/builds/{platform}/{appVersion}`: the build declared (or declared again).
    func declareBuildRoute(_ request: borrowing HTTPRequest, _ match: RouteMatch) throws(Problem) -> HTTPReply {
        let id = buildID(match)
        guard mediaType(request.header("Content-Type") ?? "") == "application/json" else { throw ManagementInputs.unsupportedLayoutType }
        // The declaration is checked now (400, 422); the command keeps the request's body, read again when it runs.
        do throws(BuildError) {
            _ = try BuildSpec.decode(request.body)
        } catch {
            throw Self.buildProblem(error)
        }
        let options = try ManagementInputs.writeOptions(match, account: "", environment: changes.environments.served, clock: changes.clock)
        let order = ChangeOrder(
            .buildDeclare(build: "\(id.platform.rawValue)/\(id.version)", body: String(decoding: request.body, as: UTF8.self)), account: "",
            environment: changes.environments.served, precondition: .none, author: match.author, options: options)
        return .deferred { await self.changes.run(order) }
    }

    func listBuildsRoute() -> HTTPReply {
        .deferred {
            do throws(StoreError) {
                let builds = try await self.changes.store.builds().compactMap(BuildRegistry.build)
                return json(200, ["builds": .array(builds.map { .object(self.buildObject(self.seenNow($0))) })])
            } catch {
                return self.changes.storeProblem(error)
            }
        }
    }

    /// `GET /v1/builds/{platform}/{appVersion}`: one declared build.
    func readBuildRoute(_ match: RouteMatch) -> HTTPReply {
        let id = buildID(match)
        return .deferred {
            do throws(StoreError) {
                guard let build = try await self.changes.store.builds().compactMap(BuildRegistry.build).first(where: { $0.id == id })
                else {
                    return Problem.undeclaredBuild(id).response
                }
                return json(200, self.buildObject(self.seenNow(build)))
            } catch {
                return self.changes.storeProblem(error)
            }
        }
    }

    /// `DELETE /v1/builds/{platform}/{appVersion}`: the build retired (held for review when a live build's answers in
    /// a protected environment would change).
    func retireBuildRoute(_ match: RouteMatch) throws(Problem) -> HTTPReply {
        let id = buildID(match)
        let options = try ManagementInputs.writeOptions(match, account: "", environment: changes.environments.served, clock: changes.clock)
        let order = ChangeOrder(
            .buildRetire(build: "\(id.platform.rawValue)/\(id.version)"), account: "", environment: changes.environments.served,
            precondition: .none, author: match.author, options: options)
        return .deferred { await self.changes.run(order) }
    }

    /// `build` with the sightings of this replica not yet written to the store.
    private func seenNow(_ build: Build) -> Build {
        var build = build
        if let pending = changes.builds.pendingSeen(build.id), pending > (build.lastSeenMillis ?? 0) { build.lastSeenMillis = pending }
        return build
    }

    /// The build as the API shows it (``Changes/buildObject(_:)``).
    func buildObject(_ build: Build) -> [String: JSONValue] { changes.buildObject(build) }

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
}
