import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Keeps an app's tab bar layout: shows the last good one at once, revalidates it with the server, stores what
/// the server sends, and follows changes as they happen.
///
/// ```swift
/// let client = try TabClient(configuration: .init(server: url, account: "jack"), bundle: bundled)
/// show(client.current)                            // at launch, never blocks, never empty
/// for await layout in client.updates() { show(layout) }   // each change, within a second
/// ```
public final class TabClient: Sendable {
    /// Where the layout ``current`` returns came from.
    public enum Source: Sendable, Hashable {
        /// The layout bundled with the app (first launch, or the cache was unusable).
        case bundle
        /// The last good layout stored on disk by an earlier run.
        case cache
        /// The server, during this run.
        case server
    }

    /// What ``refresh()`` found.
    public enum RefreshOutcome: Sendable, Equatable {
        /// `304`: ``current`` is the server's layout.
        case notModified
        /// `200` carrying the ETag of ``current`` (a cache on the way that does not answer `304`): ``current``
        /// stays, and the cache file is not written again.
        case unchanged
        /// `200` with this layout, now ``current`` and stored.
        case updated(CompiledLayout)
        /// `200` with a lower `version` of the layout shown (a lagging replica or cache): dropped, ``current``
        /// stays whether it came from the server, the disk or the bundle.
        case droppedOlder(dropped: LayoutReference, kept: LayoutReference)
        /// Manifest mode: a manifest with a lower `revision` than the one followed (a lagging cache): ignored.
        case droppedOlderManifest(revision: Int, kept: Int)
        /// `200` (or a manifest's choice) of a version the launch guard blocked or the server revoked: nothing changed.
        case blocked(LayoutReference)
        /// Manifest mode: `…/tabs?version=N` answered `410 Gone`: `version` was revoked meanwhile. It is refused from now on
        /// (``revokedVersions``) as if the server had listed it, with a ``TabClientEvent/revoked(version:shown:)``; `shown` is
        /// the layout shown now: the one before, or, when it was `version`, the last layout that rendered, else the bundle.
        case revoked(version: Int, shown: LayoutReference)
    }

    struct State {
        var layout: CompiledLayout
        /// Sent as `If-None-Match`: the ETags of ``layout`` (a bundled one has one per content coding).
        var validators: [String]
        var source: Source
        /// The ETag of the layout in the cache file (nil: no file, or none read or written yet).
        var stored: String?
        /// Whether ``layout`` came in an answer whose `Vary` named `X-Install-Id`: one arm of a running rollout.
        var perInstall = false
        /// Manifest mode: the highest manifest revision seen (kept in the cache file with the layout it chose).
        var revision: Int?
        /// Manifest mode: the ETag of that manifest (`If-None-Match` of the next manifest request).
        var manifestETag: String?
        /// Manifest mode: the newest manifest followed in this run (its choice is made again at each answer, by the
        /// device's clock).
        var manifest: Manifest?
        /// Manifest mode: the candidate a coming step gives this install, prefetched and not shown yet.
        var pending: Pending?
        /// The launch guard: when ``layout``, newly shown, began to wait for ``TabClient/markRendered()`` (nil: not pending).
        var pendingSince: Date?
        /// The last layout that rendered, to go back to when the pending one never does (nil: the bundle).
        var fallback: Fallback?

        var reference: LayoutReference { LayoutReference(layout, etag: validators.first, source: source) }
    }

    /// A layout to go back to: its ETags and source as they were shown.
    struct Fallback: Sendable {
        var layout: CompiledLayout
        var validators: [String]
        var source: Source
    }

    /// A rollout's candidate fetched ahead of the step that gives it to this install (manifest mode), kept in the
    /// prefetch file until ``at``, when it becomes ``current``.
    struct Pending: Sendable, Equatable {
        var layout: CompiledLayout
        /// The answer's bytes (UTF-8 JSON), to store them again exactly, and their signature.
        var body: String
        var etag: String
        var signature: Signature?
        /// The step's time, and as the manifest wrote it.
        var at: Date
        var atText: String
        /// The newest manifest that scheduled it.
        var revision: Int
        /// ``Source/server`` when fetched in this run, ``Source/cache`` when read from the prefetch file at launch.
        var source: Source

        var reference: LayoutReference { LayoutReference(layout, etag: etag, source: source) }
    }

    public let configuration: TabClientConfiguration
    /// The id sent as `X-Install-Id` with every request: ``TabClientConfiguration/installID`` when given, else the
    /// random one kept in the cache directory (made on first use). Give it to whoever reproduces a rollout's
    /// buckets (docs/rollouts.md's formula); it identifies nothing but this install.
    public let installID: String
    let session: URLSession
    let exchanges: ExchangeDelegate
    let cache: LayoutCache?
    /// Manifest mode: the file of the prefetched candidate.
    let prefetchCache: LayoutCache?
    let state: Locked<State>
    /// Serializes "store, then publish" so that two answers arriving together cannot publish out of order.
    let storing = Locked<Void>(())
    /// The launch guard's pending, blocked and revoked versions (the cache file's, or this run's without one).
    let record: Locked<GuardRecord>
    /// The bundled layout: the floor the launch guard and a revocation go back to.
    let floor: Fallback
    /// The launch guard's wait for ``TabClientConfiguration/readyTimeout`` in this run.
    let readyTimer = Locked<Task<Void, Never>?>(nil)
    /// The reports waiting to be sent (nil: ``TabClientConfiguration/reports`` is off).
    let reportQueue: ReportQueue?
    /// Whether a batch of reports is on its way (one at a time).
    let sendingReports = Locked(false)

    /// Makes a client whose ``current`` is, at once, the last good layout on disk (of its environment), else the
    /// bundled one. Reads two small files (the layout and the install id; the id's is written on first use);
    /// makes no request.
    /// - Parameter bundle: the `…/tabs/bundle` document shipped in the app (see ``LayoutBundle/load(contentsOf:)``).
    /// - Throws: ``TabClientError/invalidEnvironment(_:reason:)`` or ``TabClientError/invalidInstallID(_:)`` for
    ///   a configuration that cannot be sent; ``TabClientError/invalidBundle(_:)`` when the bundle has no usable
    ///   layout; ``TabClientError/invalidSignature(_:)`` when keys are pinned, the bundled layout's signature does not
    ///   verify and the cache holds no verified layout either.
    public init(configuration: TabClientConfiguration, bundle: LayoutBundle) throws(TabClientError) {
        try configuration.validateIdentity()
        guard
            let bundled = bundle.representation(
                preferredLanguages: configuration.preferredLanguages, platform: configuration.platform,
                appVersion: configuration.appVersion)
        else { throw .invalidBundle("it has no representations") }
        do {
            try bundled.layout.validate()
        } catch {
            throw .invalidBundle("\(error)")
        }
        self.configuration = configuration
        reportQueue =
            configuration.reports
            ? ReportQueue(directory: configuration.cacheDirectory, account: configuration.account, environment: configuration.environment)
            : nil
        var initial = State(layout: bundled.layout, validators: bundled.validators, source: .bundle, stored: nil)
        var installIDNotStored: TabClientError?
        if let explicit = configuration.installID {
            installID = explicit
        } else if let directory = configuration.cacheDirectory {
            let resolution = InstallIDFile(directory: directory).resolve()
            installID = resolution.id
            installIDNotStored = resolution.notStored
        } else {
            installID = InstallID.random()
        }
        // With pinned keys the bundled layout is the one its signed bytes hold, and only when they verify.
        var bundleRefused: TabClientError?
        if let keys = configuration.signingKeys {
            do throws(TabClientError) {
                guard let signed = bundled.signed, let body = signed.bytes else {
                    throw .invalidSignature("the bundled layout is not signed")
                }
                try keys.verify(
                    signed.signature, kind: .layout, account: configuration.account, environment: configuration.signatureEnvironment,
                    body: body)
                initial.layout = try CompiledLayout.decode(body)
            } catch {
                bundleRefused = error.refused(in: "bundle")
            }
        }
        var cached = false
        floor = Fallback(layout: initial.layout, validators: initial.validators, source: .bundle)
        var launchReverted: Int?
        var switchedAtLaunch = false
        if let directory = configuration.cacheDirectory {
            let cache = LayoutCache(directory: directory, account: configuration.account, environment: configuration.environment)
            cache.removeLeftovers()
            let launchRecord = cache.loadGuard()
            cache.record.withLock { $0 = launchRecord }
            let launchPrevious = cache.previousBytes()
            cache.previous.withLock { $0 = launchPrevious }
            switch cache.load(signed: configuration.signingKeys != nil).map({ Self.verified($0, configuration: configuration) }) {
            case .success(let entry)? where launchRecord.refuses(entry.layout.version):
                // A blocked or revoked version left in the file (a crash between two writes): never shown.
                try? cache.storeGuard(launchRecord, dropLayout: true)
            case .success(let entry)?:
                // An app update may ship a newer layout than an old cache holds.
                let bundleIsNewer =
                    bundleRefused == nil && entry.layout.layout == initial.layout.layout
                    && (initial.layout.version ?? 0) > (entry.layout.version ?? 0)
                initial.stored = entry.etag
                initial.revision = entry.revision
                cached = !bundleIsNewer
                if !bundleIsNewer {
                    initial = State(
                        layout: entry.layout, validators: [entry.etag], source: .cache, stored: entry.etag,
                        perInstall: entry.perInstall ?? false, revision: entry.revision)
                }
            case .failure(let error)?:
                configuration.onEvent?(.cacheIgnored(error, shown: initial.reference))
                cache.remove()
            case nil:
                break
            }
            self.cache = cache
            let prefetchCache = LayoutCache(
                directory: directory, account: configuration.account, environment: configuration.environment, prefetch: true)
            prefetchCache.removeLeftovers()
            if configuration.manifestMode {
                switch prefetchCache.loadPrefetched().map({ Self.pending($0, configuration: configuration) }) {
                case .success(let pending)? where launchRecord.refuses(pending.layout.version):
                    prefetchCache.remove()
                case .success(let pending)?:
                    if let revision = initial.revision, pending.revision < revision || pending.etag == initial.stored {
                        // Scheduled by an older manifest than the one that chose the layout stored, or already stored.
                        prefetchCache.remove()
                    } else if pending.at > configuration.clock.now {
                        initial.pending = pending
                        initial.revision = max(initial.revision ?? pending.revision, pending.revision)
                    } else {
                        // Its step came while the app was not running: shown at once, offline too.
                        prefetchCache.remove()
                        if let shown = initial.layout.version, let version = pending.layout.version,
                            initial.layout.layout == pending.layout.layout, version < shown
                        {
                            configuration.onEvent?(.droppedOlder(pending.reference, kept: initial.reference))
                        } else {
                            // Newly shown by a switch: pending, with the layout that rendered kept to go back to.
                            let guarded =
                                configuration.launchAttempts > 0 && pending.layout.version != nil
                                && !(pending.layout.layout == floor.layout.layout && pending.layout.version == floor.layout.version)
                            let rendered = guarded && initial.source == .cache && launchRecord.pending == nil
                            let before = initial
                            if guarded {
                                let entry = rendered ? cache.entryBytes() : nil
                                cache.previous.withLock { $0 = entry }
                                cache.record.withLock { record in
                                    record.pending = pending.layout.version
                                    record.launches = 1
                                }
                                switchedAtLaunch = true
                            }
                            var stored: String?
                            do throws(TabClientError) {
                                try cache.store(
                                    body: Data(pending.body.utf8), etag: pending.etag,
                                    signature: configuration.signingKeys == nil ? nil : pending.signature,
                                    revision: max(initial.revision ?? pending.revision, pending.revision))
                                stored = pending.etag
                            } catch {
                                configuration.onEvent?(.failed(error, retryIn: nil, kept: pending.reference))
                            }
                            initial = State(
                                layout: pending.layout, validators: [pending.etag], source: .cache, stored: stored ?? initial.stored,
                                revision: max(initial.revision ?? pending.revision, pending.revision))
                            if guarded {
                                initial.pendingSince = configuration.clock.now
                                initial.fallback =
                                    rendered ? Fallback(layout: before.layout, validators: before.validators, source: before.source) : nil
                            }
                            cached = true
                        }
                    }
                case .failure(let error)?:
                    configuration.onEvent?(.cacheIgnored(error, shown: initial.reference))
                    prefetchCache.remove()
                case nil:
                    break
                }
            } else {
                prefetchCache.remove()
            }
            if initial.source == .cache, !switchedAtLaunch {
                switch LaunchVerdict.at(
                    launch: launchRecord, holding: initial.layout.version, bundleVersion: floor.layout.version,
                    attempts: configuration.launchAttempts)
                {
                case .show:
                    break
                case .count(let next):
                    // One more launch that may end before the app says the layout rendered.
                    cache.record.withLock { $0 = next }
                    try? cache.storeGuard(next)
                    initial.pendingSince = configuration.clock.now
                case .revert(let version, let next):
                    cache.record.withLock { $0 = next }
                    cache.previous.withLock { $0 = nil }
                    initial = State(layout: floor.layout, validators: floor.validators, source: .bundle, stored: nil)
                    // Back to the last layout that rendered when the file kept it (and it still verifies), else the bundle.
                    if let launchPrevious, (try? cache.restore(launchPrevious, record: next)) != nil,
                        case .success(let entry)? = cache.load(signed: configuration.signingKeys != nil).map({
                            Self.verified($0, configuration: configuration)
                        }),
                        !next.refuses(entry.layout.version)
                    {
                        initial = State(
                            layout: entry.layout, validators: [entry.etag], source: .cache, stored: entry.etag,
                            perInstall: entry.perInstall ?? false, revision: entry.revision)
                    } else {
                        try? cache.storeGuard(next, dropLayout: true)
                    }
                    launchReverted = version
                }
            }
            self.prefetchCache = prefetchCache
            record = cache.record
        } else {
            cache = nil
            prefetchCache = nil
            record = Locked(GuardRecord())
        }
        if let bundleRefused {
            // Nothing verified to show: an app must not start on a layout its keys refuse.
            guard cached else { throw bundleRefused }
            configuration.onEvent?(.failed(bundleRefused, retryIn: nil, kept: initial.reference))
        }
        if let installIDNotStored { configuration.onEvent?(.failed(installIDNotStored, retryIn: nil, kept: initial.reference)) }
        state = Locked(initial)
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.urlCache = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.httpShouldSetCookies = false
        sessionConfiguration.timeoutIntervalForRequest = (configuration.requestTimeout + configuration.longPollWait).timeInterval
        sessionConfiguration.timeoutIntervalForResource =
            (configuration.requestTimeout + configuration.requestTimeout + configuration.longPollWait).timeInterval
        (session, exchanges) = URLSession.tabClient(sessionConfiguration)
        if let launchReverted {
            queueReport(version: launchReverted, kind: "reverted", reason: "launchAttempts")
            configuration.onEvent?(.reverted(version: launchReverted, reason: "launchAttempts", shown: initial.reference))
        }
        if initial.pendingSince != nil { startReadyTimer() }
    }

    deinit { session.invalidateAndCancel() }

    /// The layout to show now: the newest valid one this client has (server, else disk, else bundle). Never
    /// blocks on the network.
    public var current: CompiledLayout { state.withLock { $0.layout } }

    /// Where ``current`` came from.
    public var source: Source { state.withLock { $0.source } }

    /// The ETags sent as `If-None-Match` with the next request.
    public var validators: [String] { state.withLock { $0.validators } }

    /// ``current``'s name, version, ETag and source, as events name it.
    public var reference: LayoutReference { state.withLock { $0.reference } }

    /// Manifest mode: when ``current`` next changes with no request: the time of the coming step that gives this install
    /// a rollout's candidate, once the candidate is prefetched (by the configuration's ``TabClientConfiguration/clock``).
    /// Nil when no candidate is waiting. ``updates()`` switches at that time by itself; an app that only calls
    /// ``refresh()`` can schedule a call to ``switchIfDue()`` for it.
    public var nextSwitch: Date? { state.withLock { $0.pending?.at } }

    /// Manifest mode: when the time of ``nextSwitch`` has come by the device's clock, makes the prefetched candidate
    /// ``current``, stores it in the cache file and reports it (``TabClientEvent/updated(_:replacing:)``), with no
    /// request: offline too. Returns it, or nil when nothing was due. A candidate older than the version of its layout
    /// shown now is dropped instead (``TabClientEvent/droppedOlder(_:kept:)``): an older version never replaces a newer one.
    @discardableResult
    public func switchIfDue() -> CompiledLayout? {
        guard let pending = state.withLock({ $0.pending }), pending.at <= configuration.clock.now,
            case .updated(let layout)? = promote(pending, takeLower: false)
        else { return nil }
        return layout
    }

    /// Asks the server once whether ``current`` is still its layout (`If-None-Match`); on `200` validates,
    /// stores and publishes the new layout. On any failure ``current`` stays as it was. In manifest mode a prefetched
    /// candidate whose step's time has come is switched to first (``switchIfDue()``, no request): the outcome is then
    /// `.updated` with it unless the server's answer changes more.
    /// - Throws: ``TabClientError``: the status, transport failure or invalid layout that was refused.
    @discardableResult
    public func refresh() async throws(TabClientError) -> RefreshOutcome {
        checkReady()
        let switched = switchIfDue()
        do {
            let outcome = try await fetch(wait: nil)
            if let switched, outcome == .notModified || outcome == .unchanged { return .updated(switched) }
            return outcome
        } catch {
            configuration.onEvent?(.failed(error, retryIn: nil, kept: reference))
            throw error
        }
    }

    /// Each new layout as the server publishes it, for as long as the caller iterates: long-polls with the
    /// current ETag; retries failures with exponential backoff and jitter, never sooner than `Retry-After`.
    /// The first element comes at once when the server's layout already differs from ``current``. Cancelling
    /// the iterating task cancels the request in flight and ends the sequence.
    public func updates() -> LayoutUpdates { LayoutUpdates(client: self) }

    /// The cache file's entry, when keys are pinned only if its signed bytes verify.
    private static func verified(_ loaded: Result<LayoutCache.Entry, TabClientError>, configuration: TabClientConfiguration)
        -> Result<LayoutCache.Entry, TabClientError>
    {
        guard case .success(let entry) = loaded, let keys = configuration.signingKeys else { return loaded }
        do throws(TabClientError) {
            guard let signed = entry.signed, let body = signed.bytes else { throw .invalidSignature("the cached layout is not signed") }
            try keys.verify(
                signed.signature, kind: .layout, account: configuration.account, environment: configuration.signatureEnvironment, body: body
            )
            return .success(entry)
        } catch {
            return .failure(error.refused(in: "cache file"))
        }
    }

    /// A prefetch file's candidate, when keys are pinned only if its signature verifies.
    private static func pending(_ loaded: Result<LayoutCache.Prefetched, TabClientError>, configuration: TabClientConfiguration)
        -> Result<Pending, TabClientError>
    {
        do throws(TabClientError) {
            let entry = try loaded.get()
            let body = Data(entry.body.utf8)
            if let keys = configuration.signingKeys {
                do throws(TabClientError) {
                    guard let signature = entry.signature else { throw .invalidSignature("the prefetched candidate is not signed") }
                    try keys.verify(
                        signature, kind: .layout, account: configuration.account, environment: configuration.signatureEnvironment,
                        body: body)
                } catch {
                    throw error.refused(in: "prefetch file")
                }
            }
            let layout = try CompiledLayout.decode(body)
            guard let at = RFC3339.date(entry.at) else {
                throw .invalidLayout([LayoutProblem(pointer: "/at", message: "prefetch file: \(entry.at) is not an RFC 3339 time")])
            }
            return .success(
                Pending(
                    layout: layout, body: entry.body, etag: entry.etag, signature: entry.signature, at: at, atText: entry.at,
                    revision: entry.revision, source: .cache))
        } catch {
            return .failure(error)
        }
    }

    /// Runs `body`, unless the time of ``nextSwitch`` comes first by the device's clock: `body` is then cancelled and nil
    /// returned (what ``updates()`` waits with, so that a held long-poll or a backoff does not delay a switch).
    func untilSwitch<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T? {
        guard let at = nextSwitch else { return await body() }
        let clock = configuration.clock
        return await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try? await clock.sleep(until: at)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// ``fetch(wait:)`` as a result.
    func fetchResult(wait: Duration?) async -> Result<RefreshOutcome, TabClientError> {
        do {
            return .success(try await fetch(wait: wait))
        } catch {
            return .failure(error)
        }
    }

    /// What the long-poll compares to see whether an answer changed anything: the layout's ETags and, in manifest
    /// mode, the manifest's.
    var progress: [String] { state.withLock { $0.validators + ($0.manifestETag.map { [$0] } ?? []) } }

    /// A `GET` of `url` with the configuration's headers; `install` adds `X-Install-Id`, `validators` `If-None-Match`.
    private func request(_ url: URL, wait: Duration?, validators: [String], install: Bool) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = (configuration.requestTimeout + (wait ?? .zero)).timeInterval
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let languages = configuration.acceptLanguage { request.setValue(languages, forHTTPHeaderField: "Accept-Language") }
        if let platform = configuration.platform { request.setValue(platform, forHTTPHeaderField: "X-Client-Platform") }
        if let version = configuration.appVersion { request.setValue(version, forHTTPHeaderField: "X-App-Version") }
        if let environment = configuration.environment { request.setValue(environment, forHTTPHeaderField: "Tabs-Environment") }
        if install { request.setValue(installID, forHTTPHeaderField: "X-Install-Id") }
        if !validators.isEmpty { request.setValue(validators.joined(separator: ", "), forHTTPHeaderField: "If-None-Match") }
        return request
    }

    /// One request on this client's session (``URLSession/exchange(_:delegate:)``).
    func exchange(_ request: URLRequest) async throws(TabClientError) -> HTTPAnswer {
        try await session.exchange(request, delegate: exchanges)
    }

    /// Whether a `200` is one arm of a running rollout, read from its `Vary`: only with no keys pinned. With keys pinned
    /// only signed content decides what is taken, and `Vary` is not signed: a pinned client follows a rollback through
    /// manifest mode (the signed manifest chooses the version).
    private func armByVary(_ answer: HTTPAnswer) -> Bool { configuration.signingKeys == nil && answer.variesByInstall }

    /// A `304` for a request that sent no validators, or naming an ETag not among them, confirms nothing: a fault.
    private static func refuseUnsolicited(_ answer: HTTPAnswer, sent validators: [String]) throws(TabClientError) {
        func bare(_ tag: String) -> Substring {
            let trimmed = tag.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : Substring(trimmed)
        }
        let named = answer.header("ETag")
        if validators.isEmpty || named.map({ named in !validators.contains { bare($0) == bare(named) } }) == true {
            throw .unexpectedStatus(304, detail: "a 304 for an ETag this client never sent", retryAfter: nil)
        }
    }

    /// With pinned keys, checks an answer's `Tabs-Signature` over its body.
    private func verify(_ answer: HTTPAnswer, kind: SigningKeys.Kind) throws(TabClientError) {
        guard let keys = configuration.signingKeys else { return }
        try keys.verify(
            Signature(header: answer.header("Tabs-Signature")), kind: kind, account: configuration.account,
            environment: configuration.signatureEnvironment, body: answer.body)
    }

    /// One request (two in manifest mode when the manifest changed); `wait` makes it a long-poll.
    func fetch(wait: Duration?) async throws(TabClientError) -> RefreshOutcome {
        if configuration.manifestMode { return try await fetchByManifest(wait: wait) }
        let (validators, shown) = state.withLock { ($0.validators, $0.reference) }
        let url = configuration.tabsURL(wait: wait)
        configuration.onEvent?(.requestSent(url: url, longPoll: wait != nil, shown: shown))
        let answer = try await exchange(request(url, wait: wait, validators: validators, install: true))
        return try take(answer, sent: validators)
    }

    /// A `…/tabs` answer to a request that sent `validators`: `304` confirms the layout shown, `200` is verified,
    /// decoded and published; `version`: the one asked for by number (manifest mode, with the manifest's `revision`), whose
    /// `410 Gone` says it is revoked.
    private func take(_ answer: HTTPAnswer, sent validators: [String], version: Int? = nil, revision: Int? = nil) throws(TabClientError)
        -> RefreshOutcome
    {
        if answer.status == 200 || answer.status == 304, let revoked = GuardRecord.revoked(header: answer.header("Tabs-Revoked")) {
            learnRevoked(revoked)
        }
        // Only a version asked for by number is gone for good: a plain `…/tabs` answering 410 is a fault like any other.
        if answer.status == 410, let version { return .revoked(version: version, shown: learnGone(version)) }
        switch answer.status {
        case 304:
            try Self.refuseUnsolicited(answer, sent: validators)
            // A 304 is not signed: it confirms the layout shown and changes nothing else (perInstall stays).
            let confirmed = state.withLock { state in
                if state.validators == validators { state.source = .server }
                return state.reference
            }
            configuration.onEvent?(.notModified(confirmed))
            return .notModified
        case 200:
            guard let etag = answer.header("ETag"), !etag.isEmpty else { throw .missingETag }
            let layout: CompiledLayout
            do throws(TabClientError) {
                try verify(answer, kind: .layout)
                layout = try CompiledLayout.decode(answer.body)
            } catch {
                noteRefused(answer.body, error)
                throw error
            }
            if let version, layout.version != version {
                let actual = layout.version.map(String.init) ?? "none"
                throw .invalidLayout([LayoutProblem(pointer: "/version", message: "\(actual), but version \(version) was asked for")])
            }
            return publish(
                layout, body: answer.body, etag: etag, perInstall: armByVary(answer),
                signature: Signature(header: answer.header("Tabs-Signature")), revision: revision)
        default:
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
    }

    /// Manifest mode: the manifest (long-polled with its ETag), then, when it chose a version other than the one
    /// shown (or one not yet confirmed in this run), that version: the prefetched candidate when it is the one, else by
    /// number. A manifest with a lower revision than one already followed is ignored. The choice is made at the device
    /// clock's time (a step whose time has come counts), and when a coming step will move this install, its candidate
    /// is prefetched (once; a failure is reported, not thrown, and tried again at the next manifest answer).
    private func fetchByManifest(wait: Duration?) async throws(TabClientError) -> RefreshOutcome {
        let (manifestETag, shown) = state.withLock { ($0.manifestETag, $0.reference) }
        let url = configuration.manifestURL(wait: wait)
        configuration.onEvent?(.requestSent(url: url, longPoll: wait != nil, shown: shown))
        let answer = try await exchange(request(url, wait: wait, validators: manifestETag.map { [$0] } ?? [], install: false))
        switch answer.status {
        case 304:
            try Self.refuseUnsolicited(answer, sent: manifestETag.map { [$0] } ?? [])
        case 200:
            guard let etag = answer.header("ETag"), !etag.isEmpty else { throw .missingETag }
            try verify(answer, kind: .manifest)
            let manifest = try Manifest.decode(answer.body)
            let kept = state.withLock { state -> Int? in
                if let revision = state.revision, manifest.revision < revision { return revision }
                state.revision = manifest.revision
                state.manifestETag = etag
                state.manifest = manifest
                return nil
            }
            if let kept {
                configuration.onEvent?(.droppedOlderManifest(revision: manifest.revision, kept: kept))
                return .droppedOlderManifest(revision: manifest.revision, kept: kept)
            }
        default:
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
        guard let manifest = state.withLock({ $0.manifest }) else { throw .invalidManifest("304 for a manifest this client never had") }
        learnRevoked(manifest.revoked ?? [])
        let now = configuration.clock.now
        let chosen = manifest.version(for: installID, at: now)
        let move = manifest.move(for: installID, after: now)
        let pending = reconcile(move, chosen: chosen, revision: manifest.revision)
        let current = state.withLock { $0 }
        var outcome: RefreshOutcome?
        if record.withLock({ $0.refuses(chosen) }) {
            if let pending, pending.layout.version == chosen { drop(pending) }
            let refused = LayoutReference(layout: current.layout.layout, version: chosen, etag: nil, source: .server)
            configuration.onEvent?(.blocked(refused, kept: current.reference))
            outcome = .blocked(refused)
        } else if current.source == .server, current.layout.version == chosen {
            if let pending, pending.layout.version == chosen { drop(pending) }
            configuration.onEvent?(.notModified(current.reference))
            outcome = .notModified
        } else if let pending, pending.layout.version == chosen {
            outcome = promote(pending, takeLower: true)
        }
        if outcome == nil { outcome = try await fetchVersion(chosen, revision: manifest.revision, environment: manifest.environment) }
        if let move { await prefetch(move, revision: manifest.revision, environment: manifest.environment) }
        return outcome ?? .notModified
    }

    /// Manifest mode: keeps the prefetched candidate only while the newest manifest (`revision`) still schedules it for
    /// this install, with that step's time (the file written again when it moved), or chose it (`chosen`, promoted next);
    /// else drops it and its file: a rollback, a pause, another rollout. Returns the one kept.
    private func reconcile(_ move: Manifest.Move?, chosen: Int, revision: Int) -> Pending? {
        let (kept, failure) = storing.withLock { _ -> (Pending?, TabClientError?) in
            guard var pending = state.withLock({ $0.pending }) else { return (nil, nil) }
            if pending.layout.version == chosen { return (pending, nil) }
            guard let move, move.version == pending.layout.version else {
                dropLocked(pending)
                return (nil, nil)
            }
            guard move.at != pending.at || move.text != pending.atText || revision != pending.revision else { return (pending, nil) }
            pending.at = move.at
            pending.atText = move.text
            pending.revision = revision
            var failure: TabClientError?
            do throws(TabClientError) {
                try prefetchCache?.storePrefetched(
                    body: pending.body, etag: pending.etag, at: pending.atText, revision: revision,
                    signature: configuration.signingKeys == nil ? nil : pending.signature)
            } catch {
                failure = error
            }
            let updated = pending
            state.withLock { $0.pending = updated }
            return (pending, failure)
        }
        if let failure { configuration.onEvent?(.failed(failure, retryIn: nil, kept: reference)) }
        return kept
    }

    /// Drops the prefetched candidate `pending` (and its file) when it is still the one kept.
    private func drop(_ pending: Pending) { storing.withLock { _ in dropLocked(pending) } }

    /// ``drop(_:)`` with `storing` held.
    private func dropLocked(_ pending: Pending) {
        guard
            state.withLock({ state in
                guard state.pending == pending else { return false }
                state.pending = nil
                return true
            })
        else { return }
        prefetchCache?.remove()
    }

    /// Manifest mode: fetches the candidate `move` gives this install (`…/tabs?version=N`, no `If-None-Match`: nothing of
    /// it is held), checks it as any answer (signature, layout, the version asked for) and keeps it in the prefetch file
    /// with the step's time, not shown; unless one is kept already or a newer manifest came meanwhile. Its request is a
    /// `.requestSent` event, a failure a ``TabClientEvent/failed(_:retryIn:kept:)`` (not thrown), and what it kept is
    /// ``nextSwitch``: no event kind of its own, so that an app's exhaustive `switch` over events keeps compiling.
    private func prefetch(_ move: Manifest.Move, revision: Int, environment: String) async {
        guard state.withLock({ $0.pending == nil && $0.revision == revision }), !record.withLock({ $0.refuses(move.version) }) else {
            return
        }
        let url = configuration.tabsURL(version: move.version, environment: environment)
        configuration.onEvent?(.requestSent(url: url, longPoll: false, shown: reference))
        do throws(TabClientError) {
            let answer = try await exchange(request(url, wait: nil, validators: [], install: false))
            if answer.status == 410 {
                // Revoked since the manifest scheduled it: never prefetched, nor asked for again.
                _ = learnGone(move.version)
                return
            }
            guard answer.status == 200 else {
                throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
            }
            guard let etag = answer.header("ETag"), !etag.isEmpty else { throw .missingETag }
            try verify(answer, kind: .layout)
            let layout = try CompiledLayout.decode(answer.body)
            guard let text = String(data: answer.body, encoding: .utf8) else {
                throw .invalidLayout([LayoutProblem(pointer: "", message: "not UTF-8")])
            }
            if layout.version != move.version {
                let actual = layout.version.map(String.init) ?? "none"
                throw .invalidLayout([LayoutProblem(pointer: "/version", message: "\(actual), but version \(move.version) was asked for")])
            }
            let pending = Pending(
                layout: layout, body: text, etag: etag, signature: Signature(header: answer.header("Tabs-Signature")), at: move.at,
                atText: move.text, revision: revision, source: .server)
            let failure = storing.withLock { _ -> TabClientError? in
                guard state.withLock({ $0.pending == nil && $0.revision == revision }) else { return nil }
                var failure: TabClientError?
                do throws(TabClientError) {
                    try prefetchCache?.storePrefetched(
                        body: text, etag: etag, at: move.text, revision: revision,
                        signature: configuration.signingKeys == nil ? nil : pending.signature)
                } catch {
                    failure = error
                }
                state.withLock { $0.pending = pending }
                return failure
            }
            if let failure { configuration.onEvent?(.failed(failure, retryIn: nil, kept: reference)) }
        } catch .cancelled {
            return
        } catch {
            configuration.onEvent?(.failed(error, retryIn: nil, kept: reference))
        }
    }

    /// Makes the prefetched `pending` current: stores it as the layout (then removes the prefetch file: a crash between
    /// leaves both, and the next launch drops the candidate the layout's file already holds) and reports it. With
    /// `takeLower` false (its step's time came), a newer version of the same layout shown stays and the candidate is
    /// dropped; true when the newest manifest chose its version (a version fetched by number would be taken too). Nil
    /// when `pending` is no longer the candidate kept.
    private func promote(_ pending: Pending, takeLower: Bool) -> RefreshOutcome? {
        let result = storing.withLock { _ -> (RefreshOutcome, TabClientEvent, TabClientError?)? in
            let current = state.withLock { $0 }
            guard current.pending == pending else { return nil }
            if record.withLock({ $0.refuses(pending.layout.version) }) {
                dropLocked(pending)
                return (.blocked(pending.reference), .blocked(pending.reference, kept: current.reference), nil)
            }
            let shownNew = !current.validators.contains(pending.etag)
            let fallback = shownNew ? beginPending(pending.layout, replacing: current) : current.fallback
            if !takeLower, current.layout.layout == pending.layout.layout, let shown = current.layout.version,
                let version = pending.layout.version, version < shown
            {
                dropLocked(pending)
                return (
                    .droppedOlder(dropped: pending.reference, kept: current.reference),
                    .droppedOlder(pending.reference, kept: current.reference), nil
                )
            }
            var failure: TabClientError?
            var stored = current.stored
            let revision = max(current.revision ?? pending.revision, pending.revision)
            if pending.etag != current.stored, let cache {
                do throws(TabClientError) {
                    try cache.store(
                        body: Data(pending.body.utf8), etag: pending.etag,
                        signature: configuration.signingKeys == nil ? nil : pending.signature, revision: revision)
                    stored = pending.etag
                } catch {
                    failure = error
                }
            }
            prefetchCache?.remove()
            let confirmed = state.withLock { state in
                if !current.validators.contains(pending.etag) {
                    state.layout = pending.layout
                    state.validators = [pending.etag]
                    state.source = pending.source
                    state.fallback = fallback
                    state.pendingSince = self.guarding(pending.layout) ? configuration.clock.now : nil
                }
                state.stored = stored
                state.perInstall = false
                state.pending = nil
                return state.reference
            }
            if current.validators.contains(pending.etag) { return (.unchanged, .unchanged(confirmed), failure) }
            return (.updated(pending.layout), .updated(pending.reference, replacing: current.reference), failure)
        }
        guard let (outcome, event, failure) = result else { return nil }
        if let failure { configuration.onEvent?(.failed(failure, retryIn: nil, kept: reference)) }
        configuration.onEvent?(event)
        if case .updated = outcome { startReadyTimer() }
        return outcome
    }

    /// Manifest mode: `…/tabs?version=N&environment=E` (E the manifest's) with the ETags of the layout shown; no install id (the answer is the same
    /// for every install).
    private func fetchVersion(_ version: Int, revision: Int?, environment: String) async throws(TabClientError) -> RefreshOutcome {
        let (validators, shown) = state.withLock { ($0.validators, $0.reference) }
        let url = configuration.tabsURL(version: version, environment: environment)
        configuration.onEvent?(.requestSent(url: url, longPoll: false, shown: shown))
        let answer = try await exchange(request(url, wait: nil, validators: validators, install: false))
        return try take(answer, sent: validators, version: version, revision: revision)
    }

    /// Stores a validated layout, then makes it current (also when storing fails: it is valid, and newer).
    /// An answer with a lower `version` of the layout shown, whatever its source (a lagging replica's answer
    /// after a faster one, or after a relaunch from the cache or a newer bundle), is dropped, except when the
    /// layout shown was one arm of a rollout (`perInstall`) and the answer is not: the rollout ended, and a rollback
    /// gives the candidate's installs the lower stable version. In manifest mode (`revision` given) the newest
    /// manifest chose the version, and a lower one is taken (a rollback). One carrying the ETag of the layout shown
    /// changes nothing; the cache file is written only when its ETag differs.
    private func publish(
        _ layout: CompiledLayout, body: Data, etag: String, perInstall: Bool, signature: Signature?, revision: Int? = nil
    ) -> RefreshOutcome {
        let arrived = LayoutReference(layout, etag: etag, source: .server)
        let (outcome, event, failure): (RefreshOutcome, TabClientEvent, TabClientError?) = storing.withLock { _ in
            let current = state.withLock { $0 }
            if record.withLock({ $0.refuses(layout.version) }) {
                return (.blocked(arrived), .blocked(arrived, kept: current.reference), nil)
            }
            let rolledBack = current.perInstall && !perInstall || configuration.manifestMode
            if current.layout.layout == layout.layout, let shown = current.layout.version, let version = layout.version, version < shown,
                !rolledBack
            {
                return (.droppedOlder(dropped: arrived, kept: current.reference), .droppedOlder(arrived, kept: current.reference), nil)
            }
            var failure: TabClientError?
            var stored = current.stored
            let shownNew = !current.validators.contains(etag)
            let fallback = shownNew ? beginPending(layout, replacing: current) : current.fallback
            if etag != current.stored, let cache {
                do throws(TabClientError) {
                    try cache.store(
                        body: body, etag: etag, perInstall: perInstall,
                        signature: configuration.signingKeys == nil ? nil : signature, revision: revision)
                    stored = etag
                } catch {
                    failure = error
                }
            }
            if current.validators.contains(etag) {
                let confirmed = state.withLock { state in
                    state.source = .server
                    state.stored = stored
                    state.perInstall = perInstall
                    return state.reference
                }
                return (.unchanged, .unchanged(confirmed), failure)
            }
            state.withLock { state in
                state.layout = layout
                state.validators = [etag]
                state.source = .server
                state.stored = stored
                state.perInstall = perInstall
                state.fallback = fallback
                state.pendingSince = self.guarding(layout) ? configuration.clock.now : nil
            }
            return (.updated(layout), .updated(arrived, replacing: current.reference), failure)
        }
        if let failure { configuration.onEvent?(.failed(failure, retryIn: nil, kept: reference)) }
        configuration.onEvent?(event)
        if case .updated = outcome { startReadyTimer() }
        return outcome
    }

    /// Downloads `…/tabs/bundle` for the configuration's languages, platform, app version and environment: what
    /// an app's build step ships (`curl -o Tabs.bundle.json`), and what a program without a bundle starts from.
    /// The bundle is the environment's stable version (a rollout's candidate reaches an app only from the
    /// network), the same for every install: no install id is made or sent.
    /// - Throws: ``TabClientError``: ``TabClientError/invalidEnvironment(_:reason:)`` before any request.
    public static func downloadBundle(_ configuration: TabClientConfiguration) async throws(TabClientError) -> LayoutBundle {
        if let environment = configuration.environment, let problem = TabClientConfiguration.environmentProblem(environment) {
            throw .invalidEnvironment(environment, reason: problem)
        }
        var request = URLRequest(url: configuration.bundleURL())
        request.timeoutInterval = configuration.requestTimeout.timeInterval
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let environment = configuration.environment { request.setValue(environment, forHTTPHeaderField: "Tabs-Environment") }
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.urlCache = nil
        let (session, delegate) = URLSession.tabClient(sessionConfiguration)
        defer { session.finishTasksAndInvalidate() }
        let answer = try await session.exchange(request, delegate: delegate)
        guard answer.status == 200 else {
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
        return try LayoutBundle.decode(answer.body)
    }
}
