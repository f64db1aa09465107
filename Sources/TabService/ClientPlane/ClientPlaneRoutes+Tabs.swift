import HeaderFields
import MicroHTTPD
import TabDelivery
import TabLayout
import TabSigning
import TabStore

#if canImport(Glibc)
    import Glibc
#endif

/// What a client-plane request selects, copied out of the request so that a held long-poll can select again
/// after the snapshot changes (the immediate answer reads the request's bytes directly).
struct VariantRequest: Sendable {
    var account: String
    var format: RepresentationFormat
    var localeQuery: String?
    var acceptLanguage: String?
    var platform: Platform?
    var appVersion: AppVersion?
    var acceptEncoding: String?
    /// `X-Install-Id` / `?installId=`: which arm of a rollout the install gets.
    var install: InstallID?
    /// The environment the request reads.
    var environment: EnvironmentName
}

extension ClientPlaneRoutes {
    private static let jsonOffers = MediaTypeOffers(["application/json", "application/x-plist"])
    private static let legacyOffers = MediaTypeOffers(["application/x-plist"])
    private static let previewOffers = MediaTypeOffers(["image/svg+xml"])

    /// `GET|HEAD /v1/accounts/{account}/tabs`, `…/ApplicationHierarchy.plist` and `…/tabs/preview.svg`: a lookup in
    /// the snapshot, the variant compiled only on its first request, conditional requests decided from its
    /// validators, and a long-poll held when asked for and the client already has the current representation.
    /// - Parameter buildHere: build a missing variant on this thread (a request replayed on the builder's turn);
    ///   otherwise a miss is built by ``VariantBuilder`` and the request answered when it is done.
    func serveTabs(
        _ request: borrowing HTTPRequest, account: String, format fixed: RepresentationFormat?, buildHere: Bool = false,
        remembering slot: Int? = nil
    ) -> HTTPReply {
        guard isValidAccountName(account) else { return .response(Problem.invalidAccount.response) }
        // Read before anything the answer is made of (see ``ReadMemo``).
        let generation = budget.generation
        let format: RepresentationFormat
        switch negotiateFormat(request, fixed: fixed) {
        case .success(let chosen): format = chosen
        case .failure(let problem): return .response(problem.response)
        }
        let platform: Platform?
        let appVersion: AppVersion?
        let environment: EnvironmentName
        switch clientContext(request) {
        case .success(let context): (platform, appVersion, environment) = context
        case .failure(let problem): return .response(problem.response)
        }
        let install: InstallID?
        switch installID(request) {
        case .success(let named): install = named
        case .failure(let problem): return .response(problem.response)
        }
        // `?version=N` (…/tabs only): that version as long as the environment asked for serves or served it, the
        // same for every install, immutable; never held.
        let pinned: Int?
        switch fixed == nil ? requestedVersion(request) : .success(nil) {
        case .success(let version): pinned = version
        case .failure(let problem): return .response(problem.response)
        }
        let wait: Int?
        switch requestedWait(request) {
        case .success(let seconds): wait = pinned == nil ? seconds : nil
        case .failure(let problem): return .response(problem.response)
        }
        let published = publisher.snapshot
        let snapshot = environment == environments.served ? published : published.environment(environment.text)
        let choice = pinned == nil ? snapshot.entry(for: account, install: install, at: clock.now) : nil
        var entry: LayoutEntry
        if let pinned {
            // Served now by the environment, else served before (read from the store once per publication); never
            // once revoked.
            let owner = historyOwner(of: account)
            if published.revoked(owner)?.all.contains(pinned) == true {
                return .response(Problem.revoked(owner, pinned).response)
            }
            switch servedVersion(account, pinned, in: environment).map(ServedHistory.Lookup.known)
                ?? servedHistory.lookup(owner, version: pinned, in: published, environment: environment.text)
            {
            case .known(let found?): entry = found
            case .known(nil):
                return .response(
                    Problem.notFound(
                        "\(environment.text) does not serve and never served version \(pinned) of '\(account)' (drafts are not served)"
                    ).response)
            case .unknown:
                return readHistoryThenServe(
                    Self.replayable(request), account: account, owner: owner, version: pinned, format: fixed, snapshot: published)
            }
        } else {
            guard let chosen = choice?.entry else { return .response(Problem.noLayout(account).response) }
            entry = chosen
        }
        let locale =
            chosenLocale(request, entry)
        let representation: Representation
        let brotliNow = request.withCombinedHeader("Accept-Encoding", Self.wantsBrotliNow)
        let key = variantKey(entry, locale: locale, platform: platform, appVersion: appVersion, format: format)
        if let ready = entry.ready(key, brotliNow: brotliNow, metrics: metrics) {
            representation = ready
        } else if !buildHere {
            return buildThenServe(Self.replayable(request), account: account, format: fixed)
        } else {
            switch self.representation(
                entry, locale: locale, platform: platform, appVersion: appVersion, format: format, brotliNow: brotliNow)
            {
            case .success(let built): representation = built
            case .failure(let problem):
                guard case .nothingToOpen? = problem.cause, pinned == nil, let current = snapshot.record(entry.resolved.name) else {
                    snapshot.countServerError(account)
                    return .response(problem.response)
                }
                // A declared build that can open none of the current tabs gets the newest earlier version of this
                // environment that it opens whole.
                let owner = entry.resolved.name
                switch earlierVersion(
                    owner, environment: environment.text, before: current.version, in: published, request: request, platform: platform,
                    appVersion: appVersion, format: format, brotliNow: brotliNow)
                {
                case .found(let earlier, let built):
                    entry = earlier
                    representation = built
                case .none: return .response(problem.response)
                case .read(let version):
                    return readHistoryThenServe(
                        Self.replayable(request), account: account, owner: owner, version: version, format: fixed, snapshot: published)
                }
            }
        }
        choice?.countServed()
        let declared = builds.declared(platform: platform, appVersion: appVersion)
        if let declared { builds.note(declared, atMillis: clock.unixMillis, withheld: representation.withholds) }
        let chosen = request.withCombinedHeader("Accept-Encoding") { acceptEncoding in
            representation.form(acceptEncoding: acceptEncoding).map { preferred in
                request.withCombinedHeader("If-None-Match") { ifNoneMatch in
                    representation.form(heldBy: ifNoneMatch, acceptEncoding: acceptEncoding, preferred: preferred)
                }
            }
        }
        guard let form = chosen else { return .response(notAcceptableCoding.response) }
        let decision = conditional(request, representation: representation, form: form)
        if let wait, decision == .notModified, request.withCombinedHeader("If-None-Match", { $0 != nil }) {
            let wanted = VariantRequest(
                account: account, format: format, localeQuery: request.query("locale"),
                acceptLanguage: request.headerList("Accept-Language"),
                platform: platform, appVersion: appVersion, acceptEncoding: request.headerList("Accept-Encoding"), install: install,
                environment: environment)
            let address = addresses.address(of: request)
            if let refusal = heldBudget.reserve(address) {
                snapshot.countServerError(account)
                return .response(heldBudget.problem(refusal).response)
            }
            return hold(
                wanted, etag: form.etag, seconds: wait, since: published.sequence, preferred: request.query("wait") == nil, address: address
            )
        }
        let signature = decision == .ok ? signatureHeaders(representation, account: account, environment: environment, format: format) : []
        switch decision {
        case .ok where wait != nil: return .response(HTTPResponse(longPoll: form.ok, extra: signature))
        case .notModified where wait != nil: return .response(HTTPResponse(longPoll: form.notModified))
        case .ok, .notModified:
            // A version by number and a signed 200 are shared responses of their own, made once per form.
            // Each with its cache keys (``CacheKeys``): the same for every request of one account and environment.
            let notModified = decision == .notModified
            var response = notModified ? form.notModified : form.ok
            let signed = signature.first.map { "\n" + $0.value } ?? ""
            let owner = entry.resolved.name
            if pinned != nil {
                let keys = CacheKeys.headers(CacheKeys.pinned(account: account, owner: owner))
                // Named by `Tabs-Environment` alone, the environment chose the answer (whether it is served, its
                // signature) and the URL does not say which: a shared cache must keep them apart.
                let byHeader = request.query("environment") == nil
                let key = (byHeader ? "immutable-by-header\n" : "immutable\n") + keys[0].value + signed
                guard
                    let immutable = form.derived(
                        key, notModified: notModified, { Self.immutable($0, varyOnEnvironment: byHeader) + signature + keys })
                else {
                    return .response(
                        HTTPResponse(
                            sharing: response, headers: Self.immutable(response.headers, varyOnEnvironment: byHeader) + signature + keys))
                }
                response = immutable
            } else {
                let keys = CacheKeys.headers(CacheKeys.current(account: account, owner: owner, environment: environment.text))
                guard let keyed = form.derived("keyed\n" + keys[0].value + signed, notModified: notModified, { $0 + signature + keys })
                else {
                    return .response(HTTPResponse(sharing: response, headers: response.headers + signature + keys))
                }
                response = keyed
            }
            // Remembered when only the request's bytes and this snapshot chose it: no token, no rollout of the account
            // (time and install), every coded form made (a brotli form made later would change the choice).
            // A declared build's sighting and withheld answer are noted by every hit too.
            if let slot, representation.completer == nil, choice?.rollout == nil {
                readMemo.remember(
                    request, sequence: published.sequence, generation: generation,
                    answer: ReadMemo.Answer(response: response, representation: representation, slot: slot, build: declared))
            }
            return .prepared(response)
        case .preconditionFailed:
            return .response(
                Problem(
                    .preconditionFailed, detail: "the current representation does not match If-Match / If-Unmodified-Since",
                    headers: [HTTPHeader("ETag", form.etag)]
                ).response)
        }
    }

    /// `Tabs-Signature` for a 200 of `…/tabs` (JSON or plist, not the preview or the legacy plist) when the service
    /// signs; none otherwise.
    func signatureHeaders(_ representation: Representation, account: String, environment: EnvironmentName, format: RepresentationFormat)
        -> [HTTPHeader]
    {
        guard let signer = signer, format == .json || format == .plist else { return [] }
        return [representation.signature(account: account, environment: environment.text, signer: signer)]
    }

    private var notAcceptableCoding: Problem {
        Problem(
            .notAcceptable, detail: "Accept-Encoding refuses every coding this representation has (identity, and br or gzip when smaller)")
    }

    /// The cache key of `entry`'s variant for a locale index, platform, app version and format.
    func variantKey(_ entry: LayoutEntry, locale: Int, platform: Platform?, appVersion: AppVersion?, format: RepresentationFormat)
        -> VariantKey
    {
        VariantKey(
            locale: UInt16(locale), platform: platform.map { UInt8(Platform.allCases.firstIndex(of: $0)! + 1) } ?? 0,
            versionClass: entry.versionClass(appVersion), format: format,
            build: builds.declared(platform: platform, appVersion: appVersion)?.slot ?? 0)
    }

    /// The request fields the client plane reads, copied out so that it can be answered again after its variant is
    /// built (the request's own bytes live only for libmicrohttpd's call).
    static func replayable(_ request: borrowing HTTPRequest) -> TestRequest {
        var query: [(String, String)] = []
        for name in ["locale", "platform", "appVersion", "wait", "selected", "scheme", "environment", "installId", "version"] {
            if let value = request.query(name) { query.append((name, value)) }
        }
        var headers: [(String, String)] = []
        for name in Self.replayedHeaders {
            if let value = request.headerList(name) { headers.append((name, value)) }
        }
        return TestRequest(request.method, request.path, query: query, headers: headers, clientAddress: request.clientAddress)
    }

    private static let replayedHeaders = [
        "Accept", "Accept-Language", "Accept-Encoding", "If-None-Match", "If-Match", "If-Modified-Since", "If-Unmodified-Since",
        "Prefer", "X-Client-Platform", "X-App-Version", "X-Forwarded-For", "Forwarded", "Tabs-Environment", "X-Install-Id",
    ]

    /// Builds the variant `request` needs on the ``VariantBuilder``, then answers it as if it had been cached
    /// (long-poll included); 503 when the layout already has its share of builds waiting.
    private func buildThenServe(_ request: TestRequest, account: String, format fixed: RepresentationFormat?) -> HTTPReply {
        .deferred {
            let built = await self.builder.build(layout: account) {
                self.serveTabs(request.request, account: account, format: fixed, buildHere: true)
            }
            switch built {
            case nil:
                self.publisher.snapshot.countServerError(account)
                return Problem(
                    .busy, detail: "this layout has \(self.builder.perLayout) new variants being built; retry shortly",
                    headers: [HTTPHeader("Retry-After", "1")]
                ).response
            case let reply?: return await reply.response()
            }
        }
    }

    /// Whose versions `…/tabs?version=N` of `account` names: the account's own when an environment serves a layout of
    /// its own, else the layout it falls back to (`default`).
    func historyOwner(of account: String) -> String {
        if environments.names.contains(where: { snapshot(for: $0).record(account) != nil }) { return account }
        return publisher.snapshot.entry(for: account)?.resolved.name ?? account
    }

    /// What a declared build that can open none of the current tabs gets instead.
    enum EarlierVersion {
        /// The newest earlier version of the environment it opens whole, and its representation.
        case found(LayoutEntry, Representation)
        /// No earlier version it opens whole.
        case none
        /// The store must be read first: the account's served versions (nil), or this version's record.
        case read(version: Int?)
    }

    /// The newest version before `current` that `environment` served of `owner` and that the request's build opens
    /// whole (no tab withheld), from ``servedHistory``.
    func earlierVersion(
        _ owner: String, environment: String, before current: Int, in snapshot: Snapshot, request: borrowing HTTPRequest,
        platform: Platform?, appVersion: AppVersion?, format: RepresentationFormat, brotliNow: Bool
    ) -> EarlierVersion {
        guard let known = servedHistory.known(owner, in: snapshot) else { return .read(version: nil) }
        for served in known.versions where served.environment == environment && served.version < current {
            guard let read = known.entries[served.version] else { return .read(version: served.version) }
            guard let earlier = read?.value(in: snapshot.context) else { continue }
            let built = representation(
                earlier, locale: chosenLocale(request, earlier), platform: platform, appVersion: appVersion, format: format,
                brotliNow: brotliNow)
            if case .success(let representation) = built, !representation.withholds { return .found(earlier, representation) }
        }
        return .none
    }

    /// Reads what `owner`'s environments served before (and the record of `version`) into ``servedHistory``, then
    /// answers `request` again.
    private func readHistoryThenServe(
        _ request: TestRequest, account: String, owner: String, version: Int?, format fixed: RepresentationFormat?, snapshot: Snapshot
    ) -> HTTPReply {
        .deferred {
            do throws(StoreError) {
                try await self.servedHistory.read(owner, version: version, snapshot: snapshot, from: self.store, metrics: self.metrics)
            } catch {
                return self.failures.problem(error).response
            }
            return await self.serveTabs(request.request, account: account, format: fixed).response()
        }
    }

    /// The cached representation of `entry` for a locale index, platform, app version and format (compiled on its
    /// first request).
    func representation(
        _ entry: LayoutEntry, locale: Int, platform: Platform?, appVersion: AppVersion?, format: RepresentationFormat, brotliNow: Bool
    ) -> Result<Representation, ProblemError> {
        let key = variantKey(entry, locale: locale, platform: platform, appVersion: appVersion, format: format)
        let declared = builds.declared(platform: platform, appVersion: appVersion)
        do throws(RepresentationError) {
            let (representation, sweep) = try entry.representation(
                key, platform: platform, appVersion: appVersion, cacheControl: cacheControl, metrics: metrics,
                brotliNow: brotliNow, build: declared?.build, buildsDeclared: !builds.isEmpty)
            if sweep { Task.detached { self.sweepVariants() } }
            return .success(representation)
        } catch .nothingToOpen {
            let build = declared.map { "\($0.build.id)" } ?? "this build"
            return .failure(
                ProblemError(
                    Problem.notFound(
                        "\(build) declares none of the view controllers of \(entry.resolved.name)'s tabs, nor of an earlier version's"),
                    cause: .nothingToOpen))
        } catch {
            logger.error("building a representation of \(entry.resolved.name) failed: \(error)")
            return .failure(ProblemError(Problem.internalError))
        }
    }

    /// Drops the cached representations that no request used since the previous sweep, across every layout
    /// (off libmicrohttpd's threads; the cache is past its bound when this runs).
    func sweepVariants() {
        var dropped = 0
        for entry in publisher.snapshot.entries.values { dropped += entry.sweep() }  // resolved entries only; never resolves
        budget.evictions.add(dropped, ordering: .relaxed)
        if dropped > 0 { budget.swept() }
        budget.sweepFinished()
        logger.debug("variant cache swept: \(dropped) dropped, \(budget.bytes) bytes held (limit \(budget.limit))")
    }

    /// The install a request names (`?installId=` over `X-Install-Id`); nil when none (the stable version), 400 for
    /// one over 128 characters or with a control character.
    func installID(_ request: borrowing HTTPRequest) -> Result<InstallID?, ProblemError> {
        guard let text = request.query("installId") ?? request.header("X-Install-Id") else { return .success(nil) }
        do throws(RolloutError) {
            return .success(try InstallID.parse(text))
        } catch {
            return .failure(ProblemError(Problem.rollout(error)))
        }
    }

    /// `?version=N`: a version number (1 to 9 digits); nil when not asked, 400 for anything else.
    func requestedVersion(_ request: borrowing HTTPRequest) -> Result<Int?, ProblemError> {
        guard let text = request.query("version") else { return .success(nil) }
        guard !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let version = Int(text), version > 0
        else { return .failure(ProblemError(Problem.badRequest("version is a version number (1, 2, …), not '\(text.prefix(64))'"))) }
        return .success(version)
    }

    /// A shared response's header fields as the answer for a version by number: `public, max-age=31536000,
    /// immutable`, a `Vary` without the install (it does not choose it), and without `Tabs-Environment` unless
    /// `varyOnEnvironment` (the environment was named by that field alone, not by `?environment=`); and no
    /// `Tabs-Revoked` (it changes; an immutable answer must not).
    static func immutable(_ headers: [HTTPHeader], varyOnEnvironment: Bool) -> [HTTPHeader] {
        headers.filter { $0.name != RevokedVersions.field }.map { header -> HTTPHeader in
            switch header.name {
            case "Cache-Control": return HTTPHeader("Cache-Control", "public, max-age=31536000, immutable")
            case "Vary":
                let kept = header.value.split(separator: ",").map { $0.trimmingCharacters(in: " ") }.filter {
                    $0 != ServedRollout.vary && (varyOnEnvironment || $0 != "Tabs-Environment")
                }
                return HTTPHeader("Vary", kept.joined(separator: ", "))
            default: return header
            }
        }
    }

    /// `?wait=N` or `Prefer: wait=N`: seconds to hold (lowered to `--max-wait`); nil when not asked.
    func requestedWait(_ request: borrowing HTTPRequest) -> Result<Int?, ProblemError> {
        var text = request.query("wait")
        // The read path asks libmicrohttpd for the field's bytes: a String only when a client sends `Prefer`.
        if text == nil, let prefer = request.withCombinedHeader("Prefer", { $0.map { String(decoding: $0, as: UTF8.self) } }) {
            text = Self.preferredWait(prefer)
        }
        guard let text else { return .success(nil) }
        guard !text.isEmpty, text.utf8.count <= 9, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let seconds = Int(text) else {
            return .failure(ProblemError(Problem.badRequest("wait is a whole number of seconds ≥ 0, not '\(text)'")))
        }
        return .success(min(seconds, maxWaitSeconds))
    }

    /// The value of the `wait` preference in a `Prefer` field (RFC 7240 §2: `token [BWS "=" BWS word]` and
    /// `;`-separated parameters, which are ignored; a word may be a quoted string). The last `wait` wins.
    static func preferredWait(_ field: String) -> String? {
        var found: String?
        for preference in field.split(separator: ",") {
            let head = preference.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let parts = head.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].trimmingCharacters(in: " \t").lowercased() == "wait" else { continue }
            var value = parts[1].trimmingCharacters(in: " \t")
            if value.utf8.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            found = value
        }
        return found
    }

    private func negotiateFormat(_ request: borrowing HTTPRequest, fixed: RepresentationFormat?) -> Result<
        RepresentationFormat, ProblemError
    > {
        let offers: MediaTypeOffers
        let formats: [RepresentationFormat]
        switch fixed {
        case nil: (offers, formats) = (Self.jsonOffers, [.json, .plist])
        case .legacyPlist: (offers, formats) = (Self.legacyOffers, [.legacyPlist])
        case .previewDark: (offers, formats) = (Self.previewOffers, [.previewDark])
        default: (offers, formats) = (Self.previewOffers, [.preview])
        }
        let index = request.withCombinedHeader("Accept") { field -> Int? in
            guard let field else { return 0 }
            return AcceptMediaType.choose(CollectionOfOne(field), offers: offers)
        }
        guard let index else {
            let offered = formats.map(\.contentType).joined(separator: " or ")
            return .failure(
                ProblemError(
                    Problem(.notAcceptable, detail: "this resource is available as \(offered)")))
        }
        return .success(formats[index])
    }

    /// The representation `wanted` selects in `snapshot`, and the coding to send it in (a held long-poll's view).
    func select(_ wanted: VariantRequest, in snapshot: Snapshot) -> Result<(Representation, CodedForm), ProblemError> {
        guard let entry = snapshot.entry(for: wanted.account, install: wanted.install, at: clock.now)?.entry else {
            return .failure(ProblemError(Problem.noLayout(wanted.account)))
        }
        let locale =
            wanted.localeQuery.map(entry.localeIndex(asked:))
            ?? Self.withBytes(wanted.acceptLanguage, entry.localeIndex(acceptLanguage:))
        let representation: Representation
        let brotliNow = Self.withBytes(wanted.acceptEncoding, Self.wantsBrotliNow)
        switch self.representation(
            entry, locale: locale, platform: wanted.platform, appVersion: wanted.appVersion, format: wanted.format, brotliNow: brotliNow)
        {
        case .success(let built): representation = built
        case .failure(let problem): return .failure(problem)
        }
        guard let form = Self.withBytes(wanted.acceptEncoding, representation.form(acceptEncoding:)) else {
            return .failure(ProblemError(notAcceptableCoding))
        }
        return .success((representation, form))
    }

    /// Whether a client accepts br but not gzip (what a cache sends after reducing `Accept-Encoding` to `br`): its
    /// answer waits for the brotli form rather than be identity, which a cache in front would keep.
    static func wantsBrotliNow(_ acceptEncoding: UnsafeBufferPointer<UInt8>?) -> Bool {
        guard let acceptEncoding else { return false }
        return AcceptEncoding.choose(CollectionOfOne(acceptEncoding), available: .gzip) != .gzip
            && AcceptEncoding.choose(CollectionOfOne(acceptEncoding), available: .br) == .br
    }

    /// Calls `body` with the UTF-8 bytes of `text`, or nil.
    static func withBytes<R>(_ text: String?, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
        guard let text else { return body(nil) }
        return Array(text.utf8).withUnsafeBufferPointer { body($0) }
    }

    /// RFC 9110 §13.2.2's order: If-Match, else If-Unmodified-Since; then If-None-Match, else If-Modified-Since.
    enum ConditionalOutcome: Equatable {
        case ok, notModified, preconditionFailed
    }

    func conditional(_ request: borrowing HTTPRequest, representation: Representation, form: CodedForm)
        -> ConditionalOutcome
    {
        let ifMatch = request.withCombinedHeader("If-Match") { field -> Bool? in
            field.map { field in form.entityTag.map { EntityTagList.matchesStrongly(CollectionOfOne(field), current: $0) } ?? false }
        }
        if let ifMatch {
            if !ifMatch { return .preconditionFailed }
        } else if let since = request.withCombinedHeader("If-Unmodified-Since", httpDate), representation.lastModifiedSeconds > since {
            return .preconditionFailed
        }
        let ifNoneMatch = request.withCombinedHeader("If-None-Match") { field -> Bool? in
            field.map { field in form.entityTag.map { EntityTagList.matchesWeakly(CollectionOfOne(field), current: $0) } ?? false }
        }
        if let ifNoneMatch { return ifNoneMatch ? .notModified : .ok }
        if let since = request.withCombinedHeader("If-Modified-Since", httpDate) {
            let unchanged =
                representation.lastModifiedSeconds < since
                || (representation.lastModifiedSeconds == since && !representation.lastModifiedIsAmbiguous)
            return unchanged ? .notModified : .ok
        }
        return .ok
    }

    /// An HTTP-date in any of its three forms (RFC 9110 §5.6.7), as Unix seconds; nil when absent or not a date.
    private func httpDate(_ field: UnsafeBufferPointer<UInt8>?) -> Int64? {
        field.flatMap { HTTPDate.seconds($0, now: clock.unixSeconds) }
    }

    /// Holds a long-poll: answers when `wanted`'s representation gets a tag other than `etag` (200 with it), when
    /// `seconds` pass (304), or at once with 304 when the service stops. Costs no thread while held.
    /// The slot ``HeldRequestBudget`` gave `address` is given back when the answer is made.
    private func hold(
        _ wanted: VariantRequest, etag: String, seconds: Int, since sequence: UInt64, preferred: Bool, address: String
    ) -> HTTPReply {
        let deadline = ContinuousClock.now + .seconds(seconds)
        let applied = preferred ? [HTTPHeader("Preference-Applied", "wait=\(seconds)")] : []
        return .deferred {
            defer { self.heldBudget.release(address) }
            var seen = sequence
            while true {
                let wake = await self.publisher.waiters.wait(account: wanted.account, after: seen, until: deadline)
                let published = self.publisher.snapshot
                seen = published.sequence
                switch self.select(wanted, in: self.snapshot(for: wanted.environment)) {
                case .failure(let problem):
                    return problem.response
                case .success(let (representation, preferred)):
                    // The coding the client holds, while it is still current (its brotli form may have landed since).
                    let form = representation.forms.first { $0.etag == etag } ?? preferred
                    if form.etag != etag {
                        let signature = self.signatureHeaders(
                            representation, account: wanted.account, environment: wanted.environment, format: wanted.format)
                        return self.longPolls.answer(form.ok, extra: applied + signature)
                    }
                    if wake != .changed { return self.longPolls.answer(form.notModified, extra: applied) }
                }
            }
        }
    }
}

extension HTTPResponse {
    /// A copy of a shared response (a long-poll answers with one after it was held). A 304 keeps the body it
    /// was built with: libmicrohttpd sends none, and its `Content-Length` is then the 200's (RFC 9110 §8.6).
    init(prepared: PreparedResponse, extra: [HTTPHeader] = []) {
        self.init(status: prepared.status, headers: prepared.headers + extra, body: prepared.body)
    }

    /// A copy of a shared response as the answer to a long-poll (`?wait=` or `Prefer: wait`, held or not):
    /// `Cache-Control: no-store` in place of the configured one, so that no shared cache keeps it. A cache that
    /// stored one would answer a later poll from it, neither holding it nor telling its `304` from a `200`
    /// (Squid does, keying on the URL with `?wait=`).
    init(longPoll prepared: PreparedResponse, extra: [HTTPHeader] = []) {
        let headers = prepared.headers.map { $0.name == "Cache-Control" ? HTTPHeader("Cache-Control", "no-store") : $0 }
        self.init(sharing: prepared, headers: headers + extra)
    }
}

extension HTTPReply {
    /// The response, once any deferred work has run (a request answered again after a wait of its own).
    func response() async -> HTTPResponse {
        switch self {
        case .prepared(let prepared): HTTPResponse(prepared: prepared)
        case .response(let response): response
        case .deferred(let work): await work()
        }
    }
}
