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
    static let clientChoices = [
        "$ref: '#/components/parameters/clientLocale'", "$ref: '#/components/parameters/clientPlatform'",
        "$ref: '#/components/parameters/clientAppVersion'", environmentParameter, environmentHeader,
    ]

    /// The environment a client reads (404 for one that does not exist).
    static let environmentParameter = "{name: environment, in: query, schema: {type: string}}"
    static let environmentHeader = "{name: Tabs-Environment, in: header, schema: {type: string}}"

    /// Headers and parameters of a conditional, negotiated read.
    static let negotiatedRead = [
        "{name: Accept-Language, in: header, schema: {type: string}}", "{name: X-Client-Platform, in: header, schema: {type: string}}",
        "{name: X-App-Version, in: header, schema: {type: string}}", "{name: If-None-Match, in: header, schema: {type: string}}",
        "{name: If-Modified-Since, in: header, schema: {type: string}}",
    ]

    static let routes: [Route<ClientPlaneRoutes>] = [
        Route(
            .get, "/v1/accounts/{account}/tabs", .open, label: "tabs", representation: true,
            APIOperation(
                "The compiled layout of an account (default's when it has none).",
                parameters: clientChoices + negotiatedRead + [
                    "{name: wait, in: query, description: 'Long-poll: hold up to this many seconds (lowered to --max-wait) while If-None-Match is current.', schema: {type: integer, minimum: 0}}",
                    "{name: Prefer, in: header, description: 'wait=N (RFC 7240), as ?wait=N.', schema: {type: string}}",
                    "{name: version, in: query, description: 'This version by number, while an environment serves it (immutable; not by install or environment).', schema: {type: integer, minimum: 1}}",
                    "{name: installId, in: query, description: 'The install (as X-Install-Id): its rollout arm.', schema: {type: string}}",
                    "{name: X-Install-Id, in: header, schema: {type: string}}",
                ],
                responses: [
                    (
                        200,
                        """
                        description: The compiled layout.
                        headers:
                          ETag: {$ref: '#/components/headers/ETag'}
                        content:
                          application/json:
                            schema: {$ref: '#/components/schemas/CompiledLayout'}
                          application/x-plist:
                            schema: {type: string}
                        """
                    ),
                    (304, "{description: 'Not modified (same ETag, no body).'}"), (400, APIOperation.problem),
                    (404, APIOperation.problem), (406, APIOperation.problem), (503, APIOperation.problem),
                ])
        ) { routes, request, match in
            routes.serveTabs(request, account: match["account"], format: nil, remembering: match.memoSlot)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/manifest", .open, label: "tabs_manifest",
            APIOperation(
                "What every install needs to choose its arm itself: the stable version and the rollout's (the same bytes for every install).",
                parameters: [
                    environmentParameter, environmentHeader, "{name: If-None-Match, in: header, schema: {type: string}}",
                    "{name: wait, in: query, description: 'Long-poll: hold up to this many seconds while If-None-Match is current.', schema: {type: integer, minimum: 0}}",
                ],
                responses: [
                    (
                        200,
                        """
                        description: The manifest (Tabs-Signature when the server signs).
                        content:
                          application/json:
                            schema: {type: object, required: [account, environment, layout, revision, stable, rollout]}
                        """
                    ),
                    (304, "{description: 'Not modified.'}"), (400, APIOperation.problem), (404, APIOperation.problem),
                    (503, APIOperation.problem),
                ])
        ) { routes, request, match in routes.serveManifest(request, account: match["account"]) },
        Route(
            .get, "/v1/keys", .open, label: "keys",
            APIOperation(
                "The public keys of --signing-key: the first signs Tabs-Signature, every one may be pinned.",
                responses: [
                    (
                        200,
                        """
                        description: The keys (none when the server signs nothing).
                        content:
                          application/json: {schema: {type: object, required: [keys], properties: {keys: {type: array, items: {type: object, required: [kid, alg, publicKey]}}}}}
                        """
                    ),
                    (304, "{description: Not modified.}"),
                ])
        ) { routes, request, _ in routes.keysReply(request) },
        Route(
            .get, "/v1/accounts/{account}/ApplicationHierarchy.plist", .open, label: "application_hierarchy", representation: true,
            APIOperation(
                "Seed 000's ApplicationHierarchy array, localized, as an XML property list.", parameters: clientChoices,
                responses: [
                    (
                        200,
                        """
                        description: The array.
                        content:
                          application/x-plist: {schema: {type: string}}
                        """
                    ),
                    (304, "{description: Not modified.}"), (400, APIOperation.problem), (404, APIOperation.problem),
                    (406, APIOperation.problem), (503, APIOperation.problem),
                ])
        ) { routes, request, match in
            routes.serveTabs(request, account: match["account"], format: .legacyPlist, remembering: match.memoSlot)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/preview.svg", .open, label: "preview", representation: true,
            inputs: [.query("scheme", ColourScheme.self, description: "light (default) or dark: appearance.dark over the light colours")],
            APIOperation(
                "The compiled layout drawn as a tab bar (SVG 1.1), same negotiation as tabs.",
                parameters: clientChoices + ["{name: selected, in: query, schema: {type: string}}"],
                responses: [
                    (
                        200,
                        """
                        description: The drawing.
                        content:
                          image/svg+xml: {schema: {type: string}}
                        """
                    ),
                    (304, "{description: Not modified.}"), (400, APIOperation.problem), (404, APIOperation.problem),
                    (406, APIOperation.problem), (503, APIOperation.problem),
                ])
        ) { routes, request, match in
            routes.servePreview(request, account: match["account"], scheme: match.inputs.query("scheme", as: ColourScheme.self) ?? .light)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/bundle", .open, label: "bundle",
            APIOperation(
                "What an app ships in its bundle, per locale: the compiled layout and the ETags tabs gives for it.",
                parameters: [
                    "{name: locale, in: query, schema: {type: array, maxItems: 64, items: {type: string}}, style: form, explode: true}",
                    "$ref: '#/components/parameters/clientPlatform'", "$ref: '#/components/parameters/clientAppVersion'",
                    environmentParameter, environmentHeader,
                ],
                responses: [
                    (
                        200,
                        """
                        description: The bundle.
                        content:
                          application/json: {schema: {type: object}}
                        """
                    ),
                    (400, APIOperation.problem), (404, APIOperation.problem),
                ])
        ) { routes, request, match in routes.serveBundle(request, account: match["account"]) },
    ]
}
