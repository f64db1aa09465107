import MicroHTTPD
import TabDelivery
import TabLayout
import TabPreview

/// What a client-plane request names, read by its handler from the inputs its route declares (``Reads``): a value,
/// so that a request answered again after its variant is built or its history read is answered for the same names.
///
/// Each input is read with its declaration's names and parsed by its own type, in the declarations' order, into a
/// field of its own: nothing is boxed or looked up by name per request, as the router's ``RouteInputs`` would (a read
/// the ``ReadMemo`` does not answer costs what it did before the inputs were declared).
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
    /// `?scheme=` and `?selected=` of a drawing.
    let scheme: ColourScheme?
    let selected: String?

    /// Which of the client plane's inputs a route declares besides its account; an input it does not declare reads
    /// as nothing.
    struct Reads: OptionSet, Sendable {
        let rawValue: UInt16

        static let platform = Reads(rawValue: 1 << 0)
        static let appVersion = Reads(rawValue: 1 << 1)
        static let locale = Reads(rawValue: 1 << 2)
        /// `?environment=` and `Tabs-Environment`.
        static let environment = Reads(rawValue: 1 << 3)
        static let install = Reads(rawValue: 1 << 4)
        static let version = Reads(rawValue: 1 << 5)
        static let wait = Reads(rawValue: 1 << 6)
        static let scheme = Reads(rawValue: 1 << 7)
        static let selected = Reads(rawValue: 1 << 8)

        /// What chooses a representation of the layout (`…/tabs`, its plist and its drawing): the client's choices and
        /// the install.
        static let choices: Reads = [.platform, .appVersion, .locale, .environment, .install]

        /// The declarations read, in the order they are read and listed (the account first).
        var declared: [RouteInput] {
            typealias Declared = ClientPlaneRoutes.Inputs
            let all: [(Reads, [RouteInput])] = [
                (.platform, [Declared.platform]), (.appVersion, [Declared.appVersion]), (.locale, [Declared.locale]),
                (.environment, [Declared.environment, Declared.environmentHeader]), (.install, [Declared.install]),
                (.version, [Declared.version]), (.wait, [Declared.wait]), (.scheme, [Declared.scheme]),
                (.selected, [Declared.selected]),
            ]
            return [Declared.account] + all.filter { contains($0.0) }.flatMap(\.1)
        }
    }

    /// Reads the account and what `reads` names from `request`, in ``Reads/declared``'s order.
    /// - Throws: the first bad value's problem (a bad account first), else one 400 for the field refusals ("the
    ///   `label` query").
    init(_ request: borrowing HTTPRequest, _ match: RouteMatch, reading reads: Reads, label: String) throws(Problem) {
        typealias Declared = ClientPlaneRoutes.Inputs
        var wrong: [FieldError] = []
        func read<Value: RouteInputValue>(_ input: RouteInput, as type: Value.Type, if read: Reads, _ request: borrowing HTTPRequest)
            throws(Problem) -> Value?
        {
            guard reads.contains(read) else { return nil }
            return try RouteInputs.read(input, as: type, request, match, wrong: &wrong)
        }
        account = try RouteInputs.read(Declared.account, as: AccountName.self, request, match, wrong: &wrong)?.text ?? ""
        platform = try read(Declared.platform, as: ClientPlatform.self, if: .platform, request)?.platform
        appVersion = try read(Declared.appVersion, as: ClientAppVersion.self, if: .appVersion, request)
        locale = try read(Declared.locale, as: String.self, if: .locale, request)
        environmentQuery = try read(Declared.environment, as: EnvironmentChoice.self, if: .environment, request)?.text
        environmentHeader = try read(Declared.environmentHeader, as: EnvironmentChoice.self, if: .environment, request)?.text
        install = try read(Declared.install, as: InstallChoice.self, if: .install, request)?.install
        version = try read(Declared.version, as: PinnedVersion.self, if: .version, request)?.value
        wait = try read(Declared.wait, as: WaitRequest.self, if: .wait, request)
        scheme = try read(Declared.scheme, as: ColourScheme.self, if: .scheme, request)
        selected = try read(Declared.selected, as: String.self, if: .selected, request)
        try RouteInputs.finish(wrong, label: label)
    }
}

extension Route where Owner == ClientPlaneRoutes {
    /// An open client-plane route whose handler is given the ``ClientInputs`` it declares (`reads`, then `inPlace`:
    /// the fields it reads as bytes where they are, declared so that `openapi.yaml` lists them).
    init(
        _ method: HTTPMethod, _ template: String, label: String, representation: Bool = false, reads: ClientInputs.Reads,
        inPlace: [RouteInput] = [], _ operation: APIOperation,
        handler: @escaping @Sendable (ClientPlaneRoutes, borrowing HTTPRequest, RouteMatch, ClientInputs) throws(Problem) -> HTTPReply
    ) {
        self.init(
            method, template, .open, label: label, representation: representation, inputs: reads.declared + inPlace, readsItsInputs: true,
            operation
        ) { routes, request, match throws(Problem) in
            try handler(routes, request, match, try ClientInputs(request, match, reading: reads, label: label))
        }
    }
}

extension ClientPlaneRoutes {
    /// The inputs of the client plane's routes (``ClientInputs/Reads/declared`` orders them: their refusals are
    /// answered in that order, the account's first); the header fields read in place last.
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
            headerSchema: .string(), headerDescription: "wait=N (RFC 7240), as ?wait=N (which wins).", repeats: true)

        static let scheme = RouteInput.query(
            "scheme", ColourScheme.self, description: "light (default) or dark: appearance.dark over the light colours")
        static let selected = RouteInput.query(
            "selected", String.self, description: "The id of the tab drawn selected (drawn for the request, not shared).")

        /// Header fields of a negotiated, conditional read, read in place as bytes.
        static let negotiated: [RouteInput] = [
            .readInPlace(.header, "Accept"), .readInPlace(.header, "Accept-Language"), .readInPlace(.header, "Accept-Encoding"),
            .readInPlace(.header, "If-None-Match"), .readInPlace(.header, "If-Modified-Since"), .readInPlace(.header, "If-Match"),
            .readInPlace(.header, "If-Unmodified-Since"),
        ]
    }

    /// The environment `inputs` names, `?environment=` (when not empty) over `Tabs-Environment`, and whether the
    /// answer must vary on that header. With the one default environment every answer is the same whichever valid
    /// name is given, so nothing varies on it.
    /// - Throws: 404 for an environment the service does not have.
    func environment(_ inputs: ClientInputs) throws(Problem) -> EnvironmentName {
        try environments.forClient(query: inputs.environmentQuery, header: inputs.environmentHeader)
    }

    /// The locale a client asks for, as an index into `entry`'s locales: `?locale=` over `Accept-Language`.
    func chosenLocale(_ request: borrowing HTTPRequest, _ inputs: ClientInputs, _ entry: LayoutEntry) -> Int {
        inputs.locale.map(entry.localeIndex(asked:)) ?? request.withCombinedHeader("Accept-Language", entry.localeIndex)
    }
}

extension EnvironmentList {
    /// The environment a client reads: `?environment=` (when not empty) over `Tabs-Environment`, else the one served.
    /// - Throws: 404 for an environment the service does not have.
    func forClient(query: String?, header: String?) throws(Problem) -> EnvironmentName {
        do throws(RolloutError) {
            return try forReading(query: query, header: header).environment
        } catch {
            throw Problem(.notFound, detail: error.description)
        }
    }
}
