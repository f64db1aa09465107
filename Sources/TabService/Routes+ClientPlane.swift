import MicroHTTPD

/// The client plane: what apps read, without credentials, from the snapshot.
extension TabService {
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

    static let clientPlaneRoutes: [Route<TabService>] = [
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
        ) { service, request, match in
            service.serveTabs(request, account: match["account"], format: nil, remembering: match.memoSlot)
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
        ) { service, request, match in service.serveManifest(request, account: match["account"]) },
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
        ) { service, request, _ in service.keysReply(request) },
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
        ) { service, request, match in
            service.serveTabs(request, account: match["account"], format: .legacyPlist, remembering: match.memoSlot)
        },
        Route(
            .get, "/v1/accounts/{account}/tabs/preview.svg", .open, label: "preview", representation: true,
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
        ) { service, request, match in service.servePreview(request, account: match["account"]) },
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
        ) { service, request, match in service.serveBundle(request, account: match["account"]) },
    ]
}
