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

    static let routes: [Route<ClientPlaneRoutes>] = [
        Route(
            .get, "/v1/accounts/{account}/tabs", label: "tabs", representation: true, reads: [.choices, .version, .wait],
            inPlace: Inputs.negotiated,
            APIOperation(
                "The compiled layout of an account (default's when it has none).",
                responses: [
                    (
                        200,
                        APIOperation.answer(
                            "The compiled layout.", ["application/json": .ref("CompiledLayout"), "application/x-plist": .string()],
                            headers: ["ETag": .component("ETag")])
                    ),
                    (304, APIOperation.answer("Not modified (same ETag, no body).")),
                ], problems: [400, 404, 406, 412, 503])
        ) { routes, request, match, inputs throws(Problem) in
            try routes.serveTabs(request, inputs, format: nil, remembering: match.memoSlot)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/manifest", label: "tabs_manifest", reads: [.environment, .wait],
            inPlace: [.readInPlace(.header, "If-None-Match")],
            APIOperation(
                "What every install needs to choose its arm itself: the stable version and the rollout's (the same bytes for every install).",
                responses: [
                    (
                        200,
                        APIOperation.json(
                            "The manifest (Tabs-Signature when the server signs).",
                            .object(required: ["account", "environment", "layout", "revision", "stable", "rollout"]))
                    ),
                    (304, APIOperation.answer("Not modified.")),
                ], problems: [400, 404, 503])
        ) { routes, request, _, inputs throws(Problem) in try routes.serveManifest(request, inputs) },
        Route(
            .get, "/v1/keys", .open, label: "keys", inputs: [.readInPlace(.header, "If-None-Match")],
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
            .get, "/v1/accounts/{account}/ApplicationHierarchy.plist", label: "application_hierarchy", representation: true,
            reads: [.choices, .wait], inPlace: Inputs.negotiated,
            APIOperation(
                "Seed 000's ApplicationHierarchy array, localized, as an XML property list.",
                responses: [
                    (200, APIOperation.answer("The array.", ["application/x-plist": .string()])),
                    (304, APIOperation.answer("Not modified.")),
                ], problems: [400, 404, 406, 412, 503])
        ) { routes, request, match, inputs throws(Problem) in
            try routes.serveTabs(request, inputs, format: .legacyPlist, remembering: match.memoSlot)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/preview.svg", label: "preview", representation: true,
            reads: [.choices, .wait, .scheme, .selected], inPlace: Inputs.negotiated,
            APIOperation(
                "The compiled layout drawn as a tab bar (SVG 1.1), same negotiation as tabs.",
                responses: [
                    (200, APIOperation.answer("The drawing.", ["image/svg+xml": .string()])),
                    (304, APIOperation.answer("Not modified.")),
                ], problems: [400, 404, 406, 412, 503])
        ) { routes, request, _, inputs throws(Problem) in
            try routes.servePreview(request, inputs, scheme: inputs.scheme ?? .light, selected: inputs.selected)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/bundle", label: "bundle", reads: [.platform, .appVersion, .environment],
            inPlace: [
                .readInPlace(
                    .query, "locale", schema: .array(.string(), maxItems: bundleLocaleLimit),
                    description: "Repeated: the locales shipped (every locale of the layout without one).")
            ],
            APIOperation(
                "What an app ships in its bundle, per locale: the compiled layout and the ETags tabs gives for it.",
                responses: [(200, APIOperation.json("The bundle.", .anyObject))], problems: [400, 404])
        ) { routes, request, _, inputs throws(Problem) in try routes.serveBundle(request, inputs) },
    ]
}
