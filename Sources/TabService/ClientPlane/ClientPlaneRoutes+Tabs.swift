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
    /// validators, and a long-poll held when asked for and the client already has the current representation. In
    /// order: ``selectEntry(_:_:environment:format:fixed:published:)`` (which layout version),
    /// ``variant(of:_:_:format:buildHere:)`` (its representation), ``negotiateCoding(_:_:)``, then
    /// ``hold(_:_:selection:form:wait:)`` or ``answer(_:_:selection:representation:form:decision:wait:generation:remembering:)``.
    /// - Parameter buildHere: build a missing variant on this thread (a request replayed on the builder's turn);
    ///   otherwise a miss is built by ``VariantBuilder`` and the request answered when it is done.
    /// - Throws: the problem that is the answer (406, 404 for an environment or layout there is none of, …).
    func serveTabs(
        _ request: borrowing HTTPRequest, _ inputs: ClientInputs, format fixed: RepresentationFormat?, buildHere: Bool = false,
        remembering slot: Int? = nil
    ) throws(Problem) -> HTTPReply {
        // Read before anything the answer is made of (see ``ReadMemo``).
        let generation = budget.generation
        let format = try negotiateFormat(request, fixed: fixed)
        let environment = try self.environment(inputs)
        let published = publisher.snapshot
        var selection: Selection
        switch try selectEntry(request, inputs, environment: environment, format: format, fixed: fixed, published: published) {
        case .ready(let selected): selection = selected
        case .later(let reply): return reply
        }
        let representation: Representation
        switch try variant(of: &selection, request, inputs, format: format, buildHere: buildHere) {
        case .ready(let built): representation = built
        case .later(let reply): return reply
        }
        selection.choice?.countServed()
        let declared = builds.declared(platform: inputs.platform, appVersion: inputs.appVersion?.version)
        if let declared { builds.note(declared, atMillis: clock.unixMillis, withheld: representation.withholds) }
        let form = try negotiateCoding(request, representation)
        let decision = conditional(request, representation: representation, form: form)
        // `?version=N`: the same for every install, immutable; never held.
        let wait = selection.pinned == nil ? inputs.wait?.seconds.map { min($0, maxWaitSeconds) } : nil
        if let wait, decision == .notModified, request.withCombinedHeader("If-None-Match", { $0 != nil }) {
            return try hold(request, inputs, selection: selection, form: form, wait: wait)
        }
        return try answer(
            request, inputs, selection: selection, representation: representation, form: form, decision: decision, wait: wait,
            generation: generation,
            remembering: slot.map { (slot: $0, build: declared) })
    }

    /// What a client-plane request was found to read: the layout version, and the snapshot it was read in.
    struct Selection {
        var entry: LayoutEntry
        let format: RepresentationFormat
        /// The format the route fixes (nil for `…/tabs`, which negotiates JSON or plist).
        let fixed: RepresentationFormat?
        let environment: EnvironmentName
        /// The snapshot published when the request was read, and the environment's snapshot within it.
        let published, snapshot: Snapshot
        /// The account's rollout choice (none for a version by number).
        let choice: ChosenEntry?
        /// `?version=N`: that version as long as the environment asked for serves or served it.
        let pinned: Int?
    }

    /// A step's outcome: what it found, or the answer later (after the store or the builder had its turn).
    enum Step<Value> {
        case ready(Value)
        case later(HTTPReply)
    }

    /// The layout version a request reads: the one its install's arm gets now, or the version by number (served now by
    /// the environment, else served before, read from the store once per publication; never once revoked).
    /// - Throws: 404 when there is none, 410 for a revoked version.
    private func selectEntry(
        _ request: borrowing HTTPRequest, _ inputs: ClientInputs, environment: EnvironmentName, format: RepresentationFormat,
        fixed: RepresentationFormat?, published: Snapshot
    ) throws(Problem) -> Step<Selection> {
        let account = inputs.account
        let snapshot = environment == environments.served ? published : published.environment(environment.text)
        guard let pinned = fixed == nil ? inputs.version : nil else {
            let choice = snapshot.entry(for: account, install: inputs.install, at: clock.now)
            guard let chosen = choice?.entry else { throw Problem.noLayout(account) }
            return .ready(
                Selection(
                    entry: chosen, format: format, fixed: fixed, environment: environment, published: published, snapshot: snapshot,
                    choice: choice,
                    pinned: nil))
        }
        let owner = historyOwner(of: account)
        if published.revoked(owner)?.all.contains(pinned) == true { throw Problem.revoked(owner, pinned) }
        switch servedVersion(account, pinned, in: environment).map(ServedHistory.Lookup.known)
            ?? servedHistory.lookup(owner, version: pinned, in: published, environment: environment.text)
        {
        case .known(let found?):
            return .ready(
                Selection(
                    entry: found, format: format, fixed: fixed, environment: environment, published: published, snapshot: snapshot,
                    choice: nil,
                    pinned: pinned))
        case .known(nil):
            throw Problem.notFound(
                "\(environment.text) does not serve and never served version \(pinned) of '\(account)' (drafts are not served)")
        case .unknown:
            return .later(
                readHistoryThenServe(
                    Self.replayable(request), inputs, owner: owner, version: pinned, format: fixed, snapshot: published))
        }
    }

    /// The selection's representation: cached, or built on this thread when `buildHere`, else built by the
    /// ``VariantBuilder`` and the request answered again then. A declared build that can open none of the current
    /// tabs gets the newest earlier version of the environment that it opens whole (the selection's entry then).
    private func variant(
        of selection: inout Selection, _ request: borrowing HTTPRequest, _ inputs: ClientInputs, format: RepresentationFormat,
        buildHere: Bool
    ) throws(Problem) -> Step<Representation> {
        let entry = selection.entry
        let (platform, appVersion) = (inputs.platform, inputs.appVersion?.version)
        let locale = chosenLocale(request, inputs, entry)
        let brotliNow = request.withCombinedHeader("Accept-Encoding", Self.wantsBrotliNow)
        let key = variantKey(entry, locale: locale, platform: platform, appVersion: appVersion, format: format)
        if let ready = entry.ready(key, brotliNow: brotliNow, metrics: metrics) { return .ready(ready) }
        guard buildHere else {
            let job = VariantBuilder.Job(entry: ObjectIdentifier(entry), variant: key)
            return .later(buildThenServe(Self.replayable(request), inputs, format: selection.fixed, job: job))
        }
        do throws(VariantFailure) {
            return .ready(
                try representation(entry, locale: locale, platform: platform, appVersion: appVersion, format: format, brotliNow: brotliNow))
        } catch {
            guard case .nothingToOpen(let problem) = error, selection.pinned == nil,
                let current = selection.snapshot.record(entry.resolved.name)
            else {
                selection.snapshot.countServerError(inputs.account)
                throw error.problem
            }
            let owner = entry.resolved.name
            switch earlierVersion(
                owner, environment: selection.environment.text, before: current.version, in: selection.published, request: request,
                inputs, format: format, brotliNow: brotliNow)
            {
            case .found(let earlier, let built):
                selection.entry = earlier
                return .ready(built)
            case .none: throw problem
            case .read(let version):
                return .later(
                    readHistoryThenServe(
                        Self.replayable(request), inputs, owner: owner, version: version, format: selection.fixed,
                        snapshot: selection.published))
            }
        }
    }
    /// The coding of the representation the request accepts, as the form a client that holds one of its tags keeps.
    /// - Throws: 406 when `Accept-Encoding` refuses every coding it has.
    private func negotiateCoding(_ request: borrowing HTTPRequest, _ representation: Representation) throws(Problem) -> CodedForm {
        let chosen = request.withCombinedHeader("Accept-Encoding") { acceptEncoding in
            representation.form(acceptEncoding: acceptEncoding).map { preferred in
                request.withCombinedHeader("If-None-Match") { ifNoneMatch in
                    representation.form(heldBy: ifNoneMatch, acceptEncoding: acceptEncoding, preferred: preferred)
                }
            }
        }
        guard let chosen else { throw notAcceptableCoding }
        return chosen
    }

    /// Holds a long-poll whose client has the current representation, within the held-request budget.
    /// - Throws: 503 with `Connection: close` when the server, or the client's address, holds its share already.
    private func hold(_ request: borrowing HTTPRequest, _ inputs: ClientInputs, selection: Selection, form: CodedForm, wait: Int)
        throws(Problem) -> HTTPReply
    {
        let wanted = VariantRequest(
            account: inputs.account, format: selection.format, localeQuery: inputs.locale,
            acceptLanguage: request.headerList("Accept-Language"), platform: inputs.platform, appVersion: inputs.appVersion?.version,
            acceptEncoding: request.headerList("Accept-Encoding"), install: inputs.install, environment: selection.environment)
        let address = addresses.address(of: request)
        if let refusal = heldBudget.reserve(address) {
            selection.snapshot.countServerError(inputs.account)
            throw heldBudget.problem(refusal)
        }
        return waitForChange(
            wanted, etag: form.etag, seconds: wait, since: selection.published.sequence, preferred: inputs.wait?.byPreference == true,
            address: address)
    }

    /// The answer now: 200 or 304 as the shared response of its form (with its cache keys, and its signature on a
    /// 200), remembered for the next identical request when only the request's bytes and the snapshot chose it.
    /// - Parameter remembering: the read memo's slot, and the declared build whose sighting a hit notes.
    /// - Throws: 412 when If-Match or If-Unmodified-Since does not hold.
    private func answer(
        _ request: borrowing HTTPRequest, _ inputs: ClientInputs, selection: Selection, representation: Representation, form: CodedForm,
        decision: ConditionalOutcome, wait: Int?, generation: UInt64, remembering: (slot: Int, build: BuildRegistry.Declared?)?
    ) throws(Problem) -> HTTPReply {
        let (account, environment) = (inputs.account, selection.environment)
        let signature =
            decision == .ok ? signatureHeaders(representation, account: account, environment: environment, format: selection.format) : []
        switch decision {
        case .ok where wait != nil: return .response(HTTPResponse(longPoll: form.ok, extra: signature))
        case .notModified where wait != nil: return .response(HTTPResponse(longPoll: form.notModified))
        case .ok, .notModified:
            // A version by number and a signed 200 are shared responses of their own, made once per form.
            // Each with its cache keys (``CacheKeys``): the same for every request of one account and environment.
            let notModified = decision == .notModified
            var response = notModified ? form.notModified : form.ok
            let signed = signature.first.map { "\n" + $0.value } ?? ""
            let owner = selection.entry.resolved.name
            if selection.pinned != nil {
                let keys = CacheKeys.headers(CacheKeys.pinned(account: account, owner: owner))
                // Named by `Tabs-Environment` alone, the environment chose the answer (whether it is served, its
                // signature) and the URL does not say which: a shared cache must keep them apart.
                let byHeader = inputs.environmentQuery == nil
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
            if let remembering, representation.completer == nil, selection.choice?.rollout == nil {
                readMemo.remember(
                    request, sequence: selection.published.sequence, generation: generation,
                    answer: ReadMemo.Answer(
                        response: response, representation: representation, slot: remembering.slot, build: remembering.build))
            }
            return .prepared(response)
        case .preconditionFailed:
            throw Problem(
                .preconditionFailed, detail: "the current representation does not match If-Match / If-Unmodified-Since",
                headers: [HTTPHeader("ETag", form.etag)])
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
    /// (long-poll included), sharing the build of a request for the same `job`; 503 when the layout already has its
    /// share of builds waiting.
    private func buildThenServe(
        _ request: TestRequest, _ inputs: ClientInputs, format fixed: RepresentationFormat?, job: VariantBuilder.Job
    )
        -> HTTPReply
    {
        .deferred {
            let built = await self.builder.build(layout: inputs.account, job: job) { () -> HTTPReply in
                do throws(Problem) {
                    return try self.serveTabs(request.request, inputs, format: fixed, buildHere: true)
                } catch {
                    return .response(error.response)
                }
            }
            switch built {
            case nil:
                self.publisher.snapshot.countServerError(inputs.account)
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
        _ inputs: ClientInputs, format: RepresentationFormat, brotliNow: Bool
    ) -> EarlierVersion {
        guard let known = servedHistory.known(owner, in: snapshot) else { return .read(version: nil) }
        for served in known.versions where served.environment == environment && served.version < current {
            guard let read = known.entries[served.version] else { return .read(version: served.version) }
            guard let earlier = read?.value(in: snapshot.context) else { continue }
            let built = try? representation(
                earlier, locale: chosenLocale(request, inputs, earlier), platform: inputs.platform, appVersion: inputs.appVersion?.version,
                format: format, brotliNow: brotliNow)
            if let built, !built.withholds { return .found(earlier, built) }
        }
        return .none
    }

    /// Reads what `owner`'s environments served before (and the record of `version`) into ``servedHistory``, then
    /// answers `request` again.
    private func readHistoryThenServe(
        _ request: TestRequest, _ inputs: ClientInputs, owner: String, version: Int?, format fixed: RepresentationFormat?,
        snapshot: Snapshot
    ) -> HTTPReply {
        .deferred {
            do throws(StoreError) {
                try await self.servedHistory.read(owner, version: version, snapshot: snapshot, from: self.store, metrics: self.metrics)
            } catch {
                return self.failures.problem(error).response
            }
            do throws(Problem) {
                return try await self.serveTabs(request.request, inputs, format: fixed).response()
            } catch {
                return error.response
            }
        }
    }

    /// The cached representation of `entry` for a locale index, platform, app version and format (compiled on its
    /// first request).
    func representation(
        _ entry: LayoutEntry, locale: Int, platform: Platform?, appVersion: AppVersion?, format: RepresentationFormat, brotliNow: Bool
    ) throws(VariantFailure) -> Representation {
        let key = variantKey(entry, locale: locale, platform: platform, appVersion: appVersion, format: format)
        let declared = builds.declared(platform: platform, appVersion: appVersion)
        do throws(RepresentationError) {
            let (representation, sweep) = try entry.representation(
                key, platform: platform, appVersion: appVersion, cacheControl: cacheControl, metrics: metrics,
                brotliNow: brotliNow, build: declared?.build, buildsDeclared: !builds.isEmpty)
            if sweep { Task.detached { self.sweepVariants() } }
            return representation
        } catch .nothingToOpen {
            let build = declared.map { "\($0.build.id)" } ?? "this build"
            throw .nothingToOpen(
                Problem.notFound(
                    "\(build) declares none of the view controllers of \(entry.resolved.name)'s tabs, nor of an earlier version's"))
        } catch {
            logger.error("building a representation of \(entry.resolved.name) failed: \(error)")
            throw .failed(Problem.internalError)
        }
    }

    /// Why a variant could not be built, with the problem that answers it.
    enum VariantFailure: Error {
        /// A declared build can open none of the layout's tabs (404): an earlier version it opens may serve instead.
        case nothingToOpen(Problem)
        /// Building it failed (500).
        case failed(Problem)

        var problem: Problem {
            switch self {
            case .nothingToOpen(let problem), .failed(let problem): problem
            }
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

    /// The format `Accept` chooses among those the route offers (JSON or plist for `…/tabs`).
    /// - Throws: 406 when it accepts none.
    private func negotiateFormat(_ request: borrowing HTTPRequest, fixed: RepresentationFormat?) throws(Problem) -> RepresentationFormat {
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
            throw Problem(.notAcceptable, detail: "this resource is available as \(offered)")
        }
        return formats[index]
    }

    /// The representation `wanted` selects in `snapshot`, and the coding to send it in (a held long-poll's view).
    /// - Throws: the problem that answers the poll instead (404 when the layout is gone).
    func select(_ wanted: VariantRequest, in snapshot: Snapshot) throws(Problem) -> (Representation, CodedForm) {
        guard let entry = snapshot.entry(for: wanted.account, install: wanted.install, at: clock.now)?.entry else {
            throw Problem.noLayout(wanted.account)
        }
        let locale =
            wanted.localeQuery.map(entry.localeIndex(asked:))
            ?? Self.withBytes(wanted.acceptLanguage, entry.localeIndex(acceptLanguage:))
        let brotliNow = Self.withBytes(wanted.acceptEncoding, Self.wantsBrotliNow)
        let representation: Representation
        do throws(VariantFailure) {
            representation = try self.representation(
                entry, locale: locale, platform: wanted.platform, appVersion: wanted.appVersion, format: wanted.format, brotliNow: brotliNow
            )
        } catch {
            throw error.problem
        }
        guard let form = Self.withBytes(wanted.acceptEncoding, representation.form(acceptEncoding:)) else { throw notAcceptableCoding }
        return (representation, form)
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
    private func waitForChange(
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
                switch Result(catching: { () throws(Problem) in try self.select(wanted, in: self.snapshot(for: wanted.environment)) }) {
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
