import MicroHTTPD
import TabAccess
import TabDelivery
import TabLayout
import TabStore
import TabTime

/// What a management request names besides its body, read the same way by every collection that manages layouts:
/// the account and version of its path, the environment, the precondition, the source's format and the write's
/// options.
enum ManagementInputs {
    /// The account a layout route names and, on version routes, the version number; a 400 when either is malformed.
    /// The token and the method were checked by the route table before any handler runs.
    static func layoutAddress(_ match: RouteMatch) -> Result<(account: String, version: Int?), ProblemError> {
        let account = match["account"]
        guard isValidAccountName(account) else { return .failure(ProblemError(Problem.invalidAccount)) }
        guard match.names.contains("version") else { return .success((account, nil)) }
        let text = match["version"]
        guard let number = Int(text), number >= 1 else {
            return .failure(ProblemError(Problem.badRequest("a version number is an integer ≥ 1, not '\(text)'")))
        }
        return .success((account, number))
    }

    /// Runs `body` with the route's checked address, or answers its problem.
    static func withLayoutAddress(_ match: RouteMatch, _ body: (String, Int?) -> HTTPReply) -> HTTPReply {
        switch layoutAddress(match) {
        case .success(let address): body(address.account, address.version)
        case .failure(let problem): .response(problem.response)
        }
    }

    /// The environment a management request names (`?environment=`, by default the first: where changes enter).
    static func environment(_ request: borrowing HTTPRequest, in environments: EnvironmentList) -> Result<EnvironmentName, ProblemError> {
        do throws(RolloutError) {
            return .success(try environments.forManaging(request.query("environment")))
        } catch {
            return .failure(ProblemError(Problem.rollout(error)))
        }
    }

    /// Where a `PUT` or `PATCH` goes and whether it moves the pointer (`?publish=false`: a draft).
    static func writeTarget(_ request: borrowing HTTPRequest, in environments: EnvironmentList) -> Result<
        (environment: EnvironmentName, mode: PublishMode), ProblemError
    > {
        let environment: EnvironmentName
        switch Self.environment(request, in: environments) {
        case .success(let chosen): environment = chosen
        case .failure(let problem): return .failure(problem)
        }
        do throws(RolloutError) {
            return .success((environment, try PublishMode(query: request.query("publish"))))
        } catch {
            return .failure(ProblemError(Problem.rollout(error)))
        }
    }

    /// `If-Match` or `If-None-Match: *`.
    static func precondition(_ request: borrowing HTTPRequest) -> WritePrecondition {
        if let field = request.headerList("If-Match") { return .ifMatch(ManagementHeaders.entityTags(field)) }
        if let field = request.header("If-None-Match"), field.trimmingCharacters(in: " \t") == "*" { return .ifNoneMatchAny }
        return .none
    }

    /// The format of an uploaded source, nil for a `Content-Type` that is none.
    static func uploadFormat(_ request: borrowing HTTPRequest) -> SourceFormat? {
        request.header("Content-Type").flatMap(sourceFormat)
    }

    /// 415 for a source that is not a layout's media type.
    static let unsupportedLayoutType = Problem(
        .unsupportedMediaType,
        detail: "a layout is application/json, application/x-plist, application/xml, text/xml or application/octet-stream (binary plist)")

    /// The options of a write request; 403 for an option the token may not use, 422 for an `Apply-At` that is not
    /// RFC 3339, in the past or more than a year ahead.
    static func writeOptions(_ request: borrowing HTTPRequest, _ match: RouteMatch, environment: EnvironmentName, clock: TimeSource)
        -> Result<WriteOptions, ProblemError>
    {
        var options = WriteOptions()
        if request.query("allowIncompatible") == "true" {
            if let grant = match.grant,
                let refusal = grant.authorize(
                    AccessRequest(scope: .deploy, target: .account(match["account"]), environment: environment.text))
            {
                return .failure(ProblemError(Problem(.insufficientScope, detail: "allowIncompatible needs \(refusal.clientDescription)")))
            }
            options.allowIncompatible = true
        }
        if request.query("bypassApproval") == "true" {
            if let grant = match.grant, !grant.scopes.grant(.admin) {
                return .failure(ProblemError(Problem(.insufficientScope, detail: "bypassApproval needs an admin token")))
            }
            options.bypassApproval = true
        }
        if let text = request.header("Apply-At") {
            switch applyAt(text, pointer: "/Apply-At", clock: clock) {
            case .success(let millis): options.applyAtMillis = millis
            case .failure(let problem): return .failure(problem)
            }
        }
        return .success(options)
    }

    /// The environment a write names (``environment(_:in:)``) and its options there (``writeOptions(_:_:environment:clock:)``).
    static func environmentAndOptions(
        _ request: borrowing HTTPRequest, _ match: RouteMatch, in environments: EnvironmentList, clock: TimeSource
    ) -> Result<(EnvironmentName, WriteOptions), ProblemError> {
        switch environment(request, in: environments) {
        case .success(let environment): writeOptions(request, match, environment: environment, clock: clock).map { (environment, $0) }
        case .failure(let problem): .failure(problem)
        }
    }

    /// An `Apply-At` or `applyAt`: RFC 3339, not in the past, at most a year ahead (422 at `pointer` otherwise).
    static func applyAt(_ text: String, pointer: String, clock: TimeSource) -> Result<Int64, ProblemError> {
        let now = clock.unixMillis
        guard let at = Timestamp.parseRFC3339(text) else {
            return .failure(
                ProblemError(invalidField(pointer, "an RFC 3339 time such as 2026-12-01T09:00:00Z, not '\(text.prefix(64))'")))
        }
        guard at.unixMillis >= now - 1_000 else { return .failure(ProblemError(invalidField(pointer, "in the past"))) }
        guard at.unixMillis <= now + 366 * 86_400_000 else {
            return .failure(ProblemError(invalidField(pointer, "more than a year ahead")))
        }
        return .success(at.unixMillis)
    }

    /// 400 for a path's locale that is not a locale tag.
    static func badLocale(_ locale: String) -> Problem { Problem.badRequest("'\(locale)' is not a locale tag such as en or fr-CA") }

    /// 422 with one error at `pointer`.
    static func invalidField(_ pointer: String, _ message: String) -> Problem {
        Problem(.invalidFields, detail: "\(pointer): \(message)", errors: [FieldError(pointer: pointer, line: nil, message: message)])
    }
}
