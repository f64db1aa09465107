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
    ///   layout.
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
        if let directory = configuration.cacheDirectory {
            let cache = LayoutCache(directory: directory, account: configuration.account, environment: configuration.environment)
            cache.removeLeftovers()
            switch cache.load() {
            case .success(let entry)?:
                // An app update may ship a newer layout than an old cache holds.
                let bundleIsNewer =
                    entry.layout.layout == bundled.layout.layout && (bundled.layout.version ?? 0) > (entry.layout.version ?? 0)
                initial.stored = entry.etag
                if !bundleIsNewer {
                    initial = State(
                        layout: entry.layout, validators: [entry.etag], source: .cache, stored: entry.etag,
                        perInstall: entry.perInstall ?? false)
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

    /// One request; `wait` makes it a long-poll.
    func fetch(wait: Duration?) async throws(TabClientError) -> RefreshOutcome {
        let (validators, shown) = state.withLock { ($0.validators, $0.reference) }
        let url = configuration.tabsURL(wait: wait)
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = (configuration.requestTimeout + (wait ?? .zero)).timeInterval
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let languages = configuration.acceptLanguage { request.setValue(languages, forHTTPHeaderField: "Accept-Language") }
        if let platform = configuration.platform { request.setValue(platform, forHTTPHeaderField: "X-Client-Platform") }
        if let version = configuration.appVersion { request.setValue(version, forHTTPHeaderField: "X-App-Version") }
        if let environment = configuration.environment { request.setValue(environment, forHTTPHeaderField: "Tabs-Environment") }
        request.setValue(installID, forHTTPHeaderField: "X-Install-Id")
        if !validators.isEmpty { request.setValue(validators.joined(separator: ", "), forHTTPHeaderField: "If-None-Match") }
        configuration.onEvent?(.requestSent(url: url, longPoll: wait != nil, shown: shown))

        let answer = try await session.exchange(request)
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
            let layout = try CompiledLayout.decode(answer.body)
            return publish(layout, body: answer.body, etag: etag, perInstall: answer.variesByInstall)
        default:
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
    }

    /// Stores a validated layout, then makes it current (also when storing fails: it is valid, and newer).
    /// An answer with a lower `version` of the layout shown, whatever its source (a lagging replica's answer
    /// after a faster one, or after a relaunch from the cache or a newer bundle), is dropped, except when the
    /// layout shown was one arm of a rollout (`perInstall`) and the answer is not: the rollout ended, and a rollback
    /// gives the candidate's installs the lower stable version. One carrying the ETag of the layout shown changes
    /// nothing; the cache file is written only when its ETag differs.
    private func publish(_ layout: CompiledLayout, body: Data, etag: String, perInstall: Bool) -> RefreshOutcome {
        let arrived = LayoutReference(layout, etag: etag, source: .server)
        let (outcome, event, failure): (RefreshOutcome, TabClientEvent, TabClientError?) = storing.withLock { _ in
            let current = state.withLock { $0 }
            let rolledBack = current.perInstall && !perInstall
            if current.layout.layout == layout.layout, let shown = current.layout.version, let version = layout.version, version < shown,
                !rolledBack
            {
                return (.droppedOlder(dropped: arrived, kept: current.reference), .droppedOlder(arrived, kept: current.reference), nil)
            }
            var failure: TabClientError?
            var stored = current.stored
            if etag != current.stored, let cache {
                do throws(TabClientError) {
                    try cache.store(body: body, etag: etag, perInstall: perInstall)
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
            state.withLock { $0 = State(layout: layout, validators: [etag], source: .server, stored: stored, perInstall: perInstall) }
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
