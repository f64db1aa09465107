import HeaderFields
import MicroHTTPD
import TabDelivery
import TabLayout

/// The one reader of what a client asks for on the client plane (tabs, long-poll, preview, bundle): its locale,
/// platform and app version, each by query parameter or by the header that stands for it.
extension ClientPlaneRoutes {
    /// The locale a client asks for, as an index into `entry`'s locales: `?locale=` over `Accept-Language`.
    func chosenLocale(_ request: borrowing HTTPRequest, _ entry: LayoutEntry) -> Int {
        request.query("locale").map(entry.localeIndex(asked:)) ?? request.withCombinedHeader("Accept-Language", entry.localeIndex)
    }

    /// The platform and app version a client names by query or header (`?platform=`, `X-Client-Platform`, …).
    func clientTargets(_ request: borrowing HTTPRequest) -> Result<(Platform?, AppVersion?), ProblemError> {
        do throws(Problem) {
            let platform = try (request.query("platform") ?? request.header("X-Client-Platform")).map(ClientPlatform.init)?.platform
            let appVersion = try (request.query("appVersion") ?? request.header("X-App-Version")).map(ClientAppVersion.init)?.version
            return .success((platform, appVersion))
        } catch {
            return .failure(ProblemError(error))
        }
    }

    /// What a client's request is answered for: its platform and app version (``clientTargets(_:)``) and its
    /// environment (``chosenEnvironment(_:)``), or the problem the first that does not read gets.
    func clientContext(_ request: borrowing HTTPRequest) -> Result<(Platform?, AppVersion?, EnvironmentName), ProblemError> {
        switch (clientTargets(request), chosenEnvironment(request)) {
        case (.failure(let problem), _), (_, .failure(let problem)): .failure(problem)
        case (.success(let targets), .success(let environment)): .success((targets.0, targets.1, environment))
        }
    }

    /// The environment a client names, `?environment=` over `Tabs-Environment`; one that does not exist is 404. With
    /// the one default environment every answer is the same whichever valid name is given, so nothing varies on it.
    func chosenEnvironment(_ request: borrowing HTTPRequest) -> Result<EnvironmentName, ProblemError> {
        do throws(RolloutError) {
            return .success(
                try environments.forReading(query: request.query("environment"), header: request.header("Tabs-Environment")).environment)
        } catch {
            return .failure(ProblemError(Problem(.notFound, detail: error.description)))
        }
    }
}
