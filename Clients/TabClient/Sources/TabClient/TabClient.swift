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
    }

    private struct State {
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
        /// Manifest mode: the version that manifest chose for this install.
        var chosen: Int?

        var reference: LayoutReference { LayoutReference(layout, etag: validators.first, source: source) }
    }

    public let configuration: TabClientConfiguration
    /// The id sent as `X-Install-Id` with every request: ``TabClientConfiguration/installID`` when given, else the
    /// random one kept in the cache directory (made on first use). Give it to whoever reproduces a rollout's
    /// buckets (API.md's formula); it identifies nothing but this install.
    public let installID: String
    private let session: URLSession
    private let cache: LayoutCache?
    private let state: Locked<State>
    /// Serializes "store, then publish" so that two answers arriving together cannot publish out of order.
    private let storing = Locked<Void>(())

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
        if let directory = configuration.cacheDirectory {
            let cache = LayoutCache(directory: directory, account: configuration.account, environment: configuration.environment)
            cache.removeLeftovers()
            switch cache.load(signed: configuration.signingKeys != nil).map({ Self.verified($0, configuration: configuration) }) {
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
        } else {
            cache = nil
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
        session = URLSession(configuration: sessionConfiguration)
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

    /// Asks the server once whether ``current`` is still its layout (`If-None-Match`); on `200` validates,
    /// stores and publishes the new layout. On any failure ``current`` stays as it was.
    /// - Throws: ``TabClientError``: the status, transport failure or invalid layout that was refused.
    @discardableResult
    public func refresh() async throws(TabClientError) -> RefreshOutcome {
        do {
            return try await fetch(wait: nil)
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
        let answer = try await session.exchange(request(url, wait: wait, validators: validators, install: true))
        return try take(answer, sent: validators)
    }

    /// A `…/tabs` answer to a request that sent `validators`: `304` confirms the layout shown, `200` is verified,
    /// decoded and published; `version`: the one asked for by number (manifest mode, with the manifest's `revision`).
    private func take(_ answer: HTTPAnswer, sent validators: [String], version: Int? = nil, revision: Int? = nil) throws(TabClientError)
        -> RefreshOutcome
    {
        switch answer.status {
        case 304:
            let confirmed = state.withLock { state in
                if state.validators == validators {
                    state.source = .server
                    state.perInstall = answer.variesByInstall
                }
                return state.reference
            }
            configuration.onEvent?(.notModified(confirmed))
            return .notModified
        case 200:
            guard let etag = answer.header("ETag"), !etag.isEmpty else { throw .missingETag }
            try verify(answer, kind: .layout)
            let layout = try CompiledLayout.decode(answer.body)
            if let version, layout.version != version {
                let actual = layout.version.map(String.init) ?? "none"
                throw .invalidLayout([LayoutProblem(pointer: "/version", message: "\(actual), but version \(version) was asked for")])
            }
            return publish(
                layout, body: answer.body, etag: etag, perInstall: answer.variesByInstall,
                signature: Signature(header: answer.header("Tabs-Signature")), revision: revision)
        default:
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
    }

    /// Manifest mode: the manifest (long-polled with its ETag), then, when it chose a version other than the one
    /// shown (or one not yet confirmed in this run), that version by number. A manifest with a lower revision than
    /// one already followed is ignored.
    private func fetchByManifest(wait: Duration?) async throws(TabClientError) -> RefreshOutcome {
        let (manifestETag, shown) = state.withLock { ($0.manifestETag, $0.reference) }
        let url = configuration.manifestURL(wait: wait)
        configuration.onEvent?(.requestSent(url: url, longPoll: wait != nil, shown: shown))
        let answer = try await session.exchange(request(url, wait: wait, validators: manifestETag.map { [$0] } ?? [], install: false))
        switch answer.status {
        case 304:
            break
        case 200:
            guard let etag = answer.header("ETag"), !etag.isEmpty else { throw .missingETag }
            try verify(answer, kind: .manifest)
            let manifest = try Manifest.decode(answer.body)
            let kept = state.withLock { state -> Int? in
                if let revision = state.revision, manifest.revision < revision { return revision }
                state.revision = manifest.revision
                state.manifestETag = etag
                state.chosen = manifest.version(for: installID)
                return nil
            }
            if let kept {
                configuration.onEvent?(.droppedOlderManifest(revision: manifest.revision, kept: kept))
                return .droppedOlderManifest(revision: manifest.revision, kept: kept)
            }
        default:
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
        let (chosen, revision, current) = state.withLock { ($0.chosen, $0.revision, $0) }
        guard let chosen else { throw .invalidManifest("304 for a manifest this client never had") }
        if current.source == .server, current.layout.version == chosen {
            configuration.onEvent?(.notModified(current.reference))
            return .notModified
        }
        return try await fetchVersion(chosen, revision: revision)
    }

    /// Manifest mode: `…/tabs?version=N` with the ETags of the layout shown; no install id (the answer is the same
    /// for every install).
    private func fetchVersion(_ version: Int, revision: Int?) async throws(TabClientError) -> RefreshOutcome {
        let (validators, shown) = state.withLock { ($0.validators, $0.reference) }
        let url = configuration.tabsURL(version: version)
        configuration.onEvent?(.requestSent(url: url, longPoll: false, shown: shown))
        let answer = try await session.exchange(request(url, wait: nil, validators: validators, install: false))
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
            let rolledBack = current.perInstall && !perInstall || configuration.manifestMode
            if current.layout.layout == layout.layout, let shown = current.layout.version, let version = layout.version, version < shown,
                !rolledBack
            {
                return (.droppedOlder(dropped: arrived, kept: current.reference), .droppedOlder(arrived, kept: current.reference), nil)
            }
            var failure: TabClientError?
            var stored = current.stored
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
            }
            return (.updated(layout), .updated(arrived, replacing: current.reference), failure)
        }
        if let failure { configuration.onEvent?(.failed(failure, retryIn: nil, kept: reference)) }
        configuration.onEvent?(event)
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
        let session = URLSession(configuration: sessionConfiguration)
        defer { session.finishTasksAndInvalidate() }
        let answer = try await session.exchange(request)
        guard answer.status == 200 else {
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
        return try LayoutBundle.decode(answer.body)
    }
}
