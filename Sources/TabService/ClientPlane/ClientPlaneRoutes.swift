import Logging
import MicroHTTPD
import TabDelivery
import TabPreview
import TabSigning
import TabStore

/// The client plane (docs/delivery.md): what apps read, without credentials, from the published snapshot — a layout
/// (`…/tabs`, the legacy plist, the preview), its manifest, the signing keys and the bundle an app ships. It holds
/// references only, each handler capturing them once: the read path costs no allocation for holding them.
struct ClientPlaneRoutes: RouteCollection {
    /// The published snapshots, and the waiters a held long-poll waits with.
    let publisher: Publisher
    /// Read only for versions no environment serves now (``ServedHistory``).
    let store: any TabStore
    /// The environments a client may name.
    let environments: EnvironmentList
    /// The variant cache's bound (its generation keys the read memo).
    let budget: VariantBudget
    let metrics: Metrics
    /// The declared app builds, whose clients get trimmed answers and whose sightings are noted.
    let builds: BuildRegistry
    /// Builds missing variants and draws previews off libmicrohttpd's threads.
    let builder: VariantBuilder
    /// Answers to repeated reads, remembered here and answered by the service before routing.
    let readMemo: ReadMemo
    let manifests: ManifestMemo
    let servedHistory: ServedHistory
    /// The long-polls held at once, in all and per client address.
    let heldBudget: HeldRequestBudget
    let longPolls: LongPollResponses
    /// Who the client is behind the trusted proxies (the held-request budget is per address).
    let addresses: ClientAddresses
    /// `Cache-Control` of client-plane answers (``ServiceConfiguration/cacheControl``).
    let cacheControl: String
    /// The longest a long-poll is held, in seconds (``ServiceConfiguration/maxWaitSeconds``).
    let maxWaitSeconds: Int
    /// ``ServiceConfiguration/manifestMaxAgeSeconds``.
    let manifestMaxAgeSeconds: Int
    /// Signs 200s of `…/tabs`, manifests and bundle entries; nil signs nothing.
    let signer: Signer?
    let failures: StoreFailures
    let logger: Logger
    /// The wall clock: rollout arms, manifests' `max-age`, bundle dates, `If-Modified-Since`.
    let clock: TimeSource

    /// The snapshot of one environment.
    func snapshot(for environment: EnvironmentName) -> Snapshot {
        let top = publisher.snapshot
        return environment == environments.served ? top : top.environment(environment.text)
    }

    /// The client's choices, as query parameters and the headers that stand for them.
    static let clientChoices: [APIParameter] =
        [.component("clientLocale"), .component("clientPlatform"), .component("clientAppVersion")] + environmentChoice

    /// The environment a client reads (404 for one that does not exist), as a query parameter or a header.
    static let environmentChoice: [APIParameter] = [.query("environment"), .header("Tabs-Environment")]

    /// Headers and parameters of a conditional, negotiated read.
    static let negotiatedRead: [APIParameter] = [
        .header("Accept-Language"), .header("X-Client-Platform"), .header("X-App-Version"), .header("If-None-Match"),
        .header("If-Modified-Since"),
    ]

    static let routes: [Route<ClientPlaneRoutes>] = [
        Route(
            .get, "/v1/accounts/{account}/tabs", .open, label: "tabs", representation: true,
            APIOperation(
                "The compiled layout of an account (default's when it has none).",
                parameters: clientChoices + negotiatedRead + [
                    .query(
                        "wait", .integer(minimum: 0),
                        description: "Long-poll: hold up to this many seconds (lowered to --max-wait) while If-None-Match is current."),
                    .header("Prefer", description: "wait=N (RFC 7240), as ?wait=N."),
                    .query(
                        "version", .integer(minimum: 1),
                        description: "This version by number, while an environment serves it (immutable; not by install or environment)."),
                    .query("installId", description: "The install (as X-Install-Id): its rollout arm."), .header("X-Install-Id"),
                ],
                responses: [
                    (
                        200,
                        APIOperation.answer(
                            "The compiled layout.", ["application/json": .ref("CompiledLayout"), "application/x-plist": .string()],
                            headers: ["ETag": .component("ETag")])
                    ),
                    (304, APIOperation.answer("Not modified (same ETag, no body).")),
                ], problems: [400, 404, 406, 503])
        ) { routes, request, match in
            routes.serveTabs(request, account: match["account"], format: nil, remembering: match.memoSlot)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/manifest", .open, label: "tabs_manifest",
            APIOperation(
                "What every install needs to choose its arm itself: the stable version and the rollout's (the same bytes for every install).",
                parameters: environmentChoice + [
                    .header("If-None-Match"),
                    .query(
                        "wait", .integer(minimum: 0), description: "Long-poll: hold up to this many seconds while If-None-Match is current."
                    ),
                ],
                responses: [
                    (
                        200,
                        APIOperation.json(
                            "The manifest (Tabs-Signature when the server signs).",
                            .object(required: ["account", "environment", "layout", "revision", "stable", "rollout"]))
                    ),
                    (304, APIOperation.answer("Not modified.")),
                ], problems: [400, 404, 503])
        ) { routes, request, match in routes.serveManifest(request, account: match["account"]) },
        Route(
            .get, "/v1/keys", .open, label: "keys",
            APIOperation(
                "The public keys of --signing-key: the first signs Tabs-Signature, every one may be pinned.",
                responses: [
                    (
                        200,
                        APIOperation.json(
                            "The keys (none when the server signs nothing).",
                            .object(["keys": .array(.object(required: ["kid", "alg", "publicKey"]))], required: ["keys"]))
                    ),
                    (304, APIOperation.answer("Not modified.")),
                ])
        ) { routes, request, _ in routes.keysReply(request) },
        Route(
            .get, "/v1/accounts/{account}/ApplicationHierarchy.plist", .open, label: "application_hierarchy", representation: true,
            APIOperation(
                "Seed 000's ApplicationHierarchy array, localized, as an XML property list.", parameters: clientChoices,
                responses: [
                    (200, APIOperation.answer("The array.", ["application/x-plist": .string()])),
                    (304, APIOperation.answer("Not modified.")),
                ], problems: [400, 404, 406, 503])
        ) { routes, request, match in
            routes.serveTabs(request, account: match["account"], format: .legacyPlist, remembering: match.memoSlot)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/preview.svg", .open, label: "preview", representation: true,
            inputs: [.query("scheme", ColourScheme.self, description: "light (default) or dark: appearance.dark over the light colours")],
            APIOperation(
                "The compiled layout drawn as a tab bar (SVG 1.1), same negotiation as tabs.",
                parameters: clientChoices + [.query("selected")],
                responses: [
                    (200, APIOperation.answer("The drawing.", ["image/svg+xml": .string()])),
                    (304, APIOperation.answer("Not modified.")),
                ], problems: [400, 404, 406, 503])
        ) { routes, request, match in
            routes.servePreview(request, account: match["account"], scheme: match.inputs.query("scheme", as: ColourScheme.self) ?? .light)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/bundle", .open, label: "bundle",
            APIOperation(
                "What an app ships in its bundle, per locale: the compiled layout and the ETags tabs gives for it.",
                parameters: [
                    .query("locale", .array(.string(), maxItems: 64), exploded: true), .component("clientPlatform"),
                    .component("clientAppVersion"),
                ] + environmentChoice,
                responses: [(200, APIOperation.json("The bundle.", .anyObject))], problems: [400, 404])
        ) { routes, request, match in routes.serveBundle(request, account: match["account"]) },
    ]
}
