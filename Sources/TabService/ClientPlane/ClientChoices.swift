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
        var platform: Platform?
        if let name = request.query("platform") ?? request.header("X-Client-Platform") {
            guard let known = Platform(rawValue: name.lowercased()) else {
                return .failure(
                    ProblemError(
                        Problem.badRequest("platform '\(name)' is not one of \(Platform.allCases.map(\.rawValue).joined(separator: ", "))"))
                )
            }
            platform = known
        }
        var appVersion: AppVersion?
        if let text = request.query("appVersion") ?? request.header("X-App-Version") {
            guard let version = AppVersion(text) else {
                return .failure(ProblemError(Problem.badRequest("app version '\(text)' is not a dotted version such as 2.1 or 3.0.2")))
            }
            appVersion = version
        }
        return .success((platform, appVersion))
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
