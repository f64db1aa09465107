import MicroHTTPD
import TabAccess
import TabDelivery
import TabLayout
import TabPreview
import TabStore
import TabTime

/// What a management request names besides its body, declared the same way by every collection that manages layouts
/// (the router parses them, ``RouteInputs``), and what a handler makes of them: the environment, the precondition, the
/// source's format and the write's options.
enum ManagementInputs {
    /// `{account}`.
    static let accountPath = RouteInput.path("account", AccountName.self, component: "account")
    /// `{version}`.
    static let versionPath = RouteInput.path("version", VersionNumber.self, component: "version")
    /// `{locale}` of a strings table.
    static let localePath = RouteInput.path("locale", LocaleTag.self, component: "locale")
    /// `?environment=` (by default the first: where changes enter).
    static let environmentQuery = RouteInput.query("environment", EnvironmentQuery.self)
    /// `?publish=false`: a draft.
    static let publishQuery = RouteInput.query("publish", PublishMode.self)
    /// What a drawing is made for: `locale`, `platform`, `appVersion` (as a client names them) and the tab `selected`.
    static let drawingTargets: [RouteInput] = [
        .query("locale", String.self, component: "clientLocale"), .query("platform", ClientPlatform.self, component: "clientPlatform"),
        .query("appVersion", ClientAppVersion.self, component: "clientAppVersion"), .query("selected", String.self),
        .query("scheme", ColourScheme.self, description: "light (default) or dark: appearance.dark over the light colours"),
    ]
    /// `If-Match` and `If-None-Match: *`, the write's precondition.
    static let preconditions = [
        RouteInput.header("If-Match", IfMatchTags.self, component: "ifMatch", repeats: true),
        RouteInput.header("If-None-Match", IfNoneMatchAny.self, component: "ifNoneMatchStar"),
    ]
    /// What a write request may choose besides its content (``WriteOptions``): past the builds gate, past review,
    /// and when an approved change request is applied.
    static let writeOptions = [
        RouteInput.query(
            "allowIncompatible", OptIn.self, description: "true: publish though a live build could not open it (deploy)."),
        RouteInput.query("bypassApproval", OptIn.self, description: "true: apply at once in a protected environment (admin)."),
        RouteInput.header("Apply-At", ApplyAt.self, description: "RFC 3339: when an approved change request is applied."),
    ]

    /// The declared `{account}`.
    static func account(_ match: RouteMatch) -> String { match.inputs.path("account", as: AccountName.self).text }

    /// The environment a management request names (`?environment=`, by default the first); 404 for one there is not.
    static func environment(_ match: RouteMatch, in environments: EnvironmentList) throws(Problem) -> EnvironmentName {
        do throws(RolloutError) {
            return try environments.forManaging(match.inputs.query("environment", as: EnvironmentQuery.self)?.named)
        } catch {
            throw .rollout(error)
        }
    }

    /// Whether a `PUT` or `PATCH` moves the pointer (absent: it does).
    static func publishMode(_ match: RouteMatch) -> PublishMode { match.inputs.query("publish", as: PublishMode.self) ?? .publish }

    /// `If-Match` or `If-None-Match: *`.
    static func precondition(_ match: RouteMatch) -> WritePrecondition {
        if let tags = match.inputs.header("If-Match", as: IfMatchTags.self) { return .ifMatch(tags.tags) }
        if match.inputs.header("If-None-Match", as: IfNoneMatchAny.self)?.isAny == true { return .ifNoneMatchAny }
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

    /// The options of a write request (``writeOptions``); 403 for an option the token may not use, 422 for an
    /// `Apply-At` in the past or more than a year ahead.
    /// - Parameter account: the account written ("" for strings tables), which `allowIncompatible` needs `deploy` on.
    static func writeOptions(_ match: RouteMatch, account: String, environment: EnvironmentName, clock: TimeSource) throws(Problem)
        -> WriteOptions
    {
        var options = WriteOptions()
        if match.inputs.query("allowIncompatible", as: OptIn.self)?.isOn == true {
            if let grant = match.grant,
                let refusal = grant.authorize(
                    AccessRequest(scope: .deploy, target: .account(account), environment: environment.text))
            {
                throw Problem(.insufficientScope, detail: "allowIncompatible needs \(refusal.clientDescription)")
            }
            options.allowIncompatible = true
        }
        if match.inputs.query("bypassApproval", as: OptIn.self)?.isOn == true {
            if let grant = match.grant, !grant.scopes.grant(.admin) {
                throw Problem(.insufficientScope, detail: "bypassApproval needs an admin token")
            }
            options.bypassApproval = true
        }
        if let at = match.inputs.header("Apply-At", as: ApplyAt.self) {
            options.applyAtMillis = try applyAtMillis(at, pointer: "/Apply-At", clock: clock)
        }
        return options
    }

    /// An `Apply-At` or `applyAt` as a time to apply at: not in the past, at most a year ahead (422 at `pointer` otherwise).
    static func applyAtMillis(_ at: ApplyAt, pointer: String, clock: TimeSource) throws(Problem) -> Int64 {
        let now = clock.unixMillis
        guard at.time.unixMillis >= now - 1_000 else { throw invalidField(pointer, "in the past") }
        guard at.time.unixMillis <= now + 366 * 86_400_000 else { throw invalidField(pointer, "more than a year ahead") }
        return at.time.unixMillis
    }

    /// 422 with one error at `pointer`.
    static func invalidField(_ pointer: String, _ message: String) -> Problem {
        Problem(.invalidFields, detail: "\(pointer): \(message)", errors: [FieldError(pointer: pointer, line: nil, message: message)])
    }
}
