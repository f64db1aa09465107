import MicroHTTPD
import TabDelivery
import TabLayout

/// What a client-plane request names, read from its route's declared inputs (``ClientPlaneRoutes/inputs``): a value,
/// so that a request answered again after its variant is built or its history read is answered for the same names.
struct ClientInputs: Sendable {
    /// The account of the path.
    let account: String
    /// `?platform=` over `X-Client-Platform`.
    let platform: Platform?
    /// `?appVersion=` over `X-App-Version`.
    let appVersion: ClientAppVersion?
    /// `?locale=` (over `Accept-Language`, read in place).
    let locale: String?
    /// `?environment=` and `Tabs-Environment`, as sent.
    let environmentQuery: String?
    let environmentHeader: String?
    /// `?installId=` over `X-Install-Id`.
    let install: InstallID?
    /// `?version=N` (`…/tabs` only).
    let version: Int?
    /// `?wait=` over `Prefer: wait=`.
    let wait: WaitRequest?

    init(_ inputs: RouteInputs) {
        account = inputs.path("account", as: AccountName.self).text
        platform = inputs.query("platform", as: ClientPlatform.self)?.platform
        appVersion = inputs.query("appVersion", as: ClientAppVersion.self)
        locale = inputs.query("locale", as: String.self)
        environmentQuery = inputs.query("environment", as: EnvironmentChoice.self)?.text
        environmentHeader = inputs.header("Tabs-Environment", as: EnvironmentChoice.self)?.text
        install = inputs.query("installId", as: InstallChoice.self)?.install
        version = inputs.query("version", as: PinnedVersion.self)?.value
        wait = inputs.query("wait", as: WaitRequest.self)
    }
}

extension ClientPlaneRoutes {
    /// The inputs of the client plane's routes, declared in the order their refusals are answered (the account
    /// first); the header fields read in place last.
    enum Inputs {
        static let account = RouteInput.path("account", AccountName.self, component: "account")
        static let platform = RouteInput.query("platform", orHeader: "X-Client-Platform", ClientPlatform.self, component: "clientPlatform")
        static let appVersion = RouteInput.query(
            "appVersion", orHeader: "X-App-Version", ClientAppVersion.self, component: "clientAppVersion")
        static let locale = RouteInput.query("locale", String.self, component: "clientLocale")
        static let environment = RouteInput.query(
            "environment", EnvironmentChoice.self, description: "The environment read (404 for none).")
        static let environmentHeader = RouteInput.header(
            "Tabs-Environment", EnvironmentChoice.self, description: "As ?environment= (which wins when not empty).")
        static let install = RouteInput.query(
            "installId", orHeader: "X-Install-Id", InstallChoice.self, description: "The install (as X-Install-Id): its rollout arm.")
        static let version = RouteInput.query(
            "version", PinnedVersion.self,
            description: "This version by number, while an environment serves it (immutable; not by install or environment).")
        static let wait = RouteInput.query(
            "wait", orHeader: "Prefer", WaitRequest.self,
            description: "Long-poll: hold up to this many seconds (lowered to --max-wait) while If-None-Match is current.",
            headerSchema: "{type: string}", headerDescription: "wait=N (RFC 7240), as ?wait=N (which wins).", repeats: true)

        /// Header fields of a negotiated, conditional read, read in place as bytes.
        static let negotiated: [RouteInput] = [
            .readInPlace(.header, "Accept"), .readInPlace(.header, "Accept-Language"), .readInPlace(.header, "Accept-Encoding"),
            .readInPlace(.header, "If-None-Match"), .readInPlace(.header, "If-Modified-Since"), .readInPlace(.header, "If-Match"),
            .readInPlace(.header, "If-Unmodified-Since"),
        ]

        /// What chooses a representation of the layout (`…/tabs`, its plist and its drawing): the account, the
        /// client's choices and the install.
        static let choices = [account, platform, appVersion, locale, environment, environmentHeader, install]
    }

    /// The environment `inputs` names, `?environment=` (when not empty) over `Tabs-Environment`, and whether the
    /// answer must vary on that header. With the one default environment every answer is the same whichever valid
    /// name is given, so nothing varies on it.
    /// - Throws: 404 for an environment the service does not have.
    func environment(_ inputs: ClientInputs) throws(Problem) -> EnvironmentName {
        do throws(RolloutError) {
            return try environments.forReading(query: inputs.environmentQuery, header: inputs.environmentHeader).environment
        } catch {
            throw Problem(.notFound, detail: error.description)
        }
    }

    /// The locale a client asks for, as an index into `entry`'s locales: `?locale=` over `Accept-Language`.
    func chosenLocale(_ request: borrowing HTTPRequest, _ inputs: ClientInputs, _ entry: LayoutEntry) -> Int {
        inputs.locale.map(entry.localeIndex(asked:)) ?? request.withCombinedHeader("Accept-Language", entry.localeIndex)
    }
}
