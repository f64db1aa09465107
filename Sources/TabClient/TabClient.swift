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
    public enum Source: Sendable, Equatable {
        /// The layout bundled with the app (first launch, or the cache was unusable).
        case bundle
        /// The last good layout stored on disk by an earlier run.
        case cache
        /// The server, during this run.
        case server
    }

    /// What ``refresh()`` found.
    public enum RefreshOutcome: Sendable, Equatable {
        /// `304` (or a `200` older than ``current``, dropped): ``current`` stays.
        case notModified
        /// `200` with this layout, now ``current`` and stored.
        case updated(CompiledLayout)
    }

    private struct State {
        var layout: CompiledLayout
        /// Sent as `If-None-Match`: the ETags of ``layout`` (a bundled one has one per content coding).
        var validators: [String]
        var source: Source
    }

    public let configuration: TabClientConfiguration
    private let session: URLSession
    private let cache: LayoutCache?
    private let state: Locked<State>
    /// Serializes "store, then publish" so that two answers arriving together cannot publish out of order.
    private let storing = Locked<Void>(())

    /// Makes a client whose ``current`` is, at once, the last good layout on disk, else the bundled one.
    /// Reads one small file; makes no request.
    /// - Parameter bundle: the `…/tabs/bundle` document shipped in the app (see ``LayoutBundle/load(contentsOf:)``).
    /// - Throws: ``TabClientError/invalidBundle(_:)`` when the bundle has no usable layout.
    public init(configuration: TabClientConfiguration, bundle: LayoutBundle) throws(TabClientError) {
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
        var initial = State(layout: bundled.layout, validators: bundled.validators, source: .bundle)
        if let directory = configuration.cacheDirectory {
            let cache = LayoutCache(directory: directory, account: configuration.account)
            cache.removeLeftovers()
            switch cache.load() {
            case .success(let entry)?:
                // An app update may ship a newer layout than an old cache holds.
                let bundleIsNewer =
                    entry.layout.layout == bundled.layout.layout && (bundled.layout.version ?? 0) > (entry.layout.version ?? 0)
                if !bundleIsNewer { initial = State(layout: entry.layout, validators: [entry.etag], source: .cache) }
            case .failure(let error)?:
                configuration.onEvent?(.cacheIgnored(error))
                cache.remove()
            case nil:
                break
            }
            self.cache = cache
        } else {
            cache = nil
        }
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

    /// Asks the server once whether ``current`` is still its layout (`If-None-Match`); on `200` validates,
    /// stores and publishes the new layout. On any failure ``current`` stays as it was.
    /// - Throws: ``TabClientError``: the status, transport failure or invalid layout that was refused.
    @discardableResult
    public func refresh() async throws(TabClientError) -> RefreshOutcome {
        do {
            return try await fetch(wait: nil)
        } catch {
            configuration.onEvent?(.failed(error, retryIn: nil))
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
        let (validators, shown) = state.withLock { ($0.validators, $0.layout) }
        let url = configuration.tabsURL(wait: wait)
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = (configuration.requestTimeout + (wait ?? .zero)).timeInterval
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let languages = configuration.acceptLanguage { request.setValue(languages, forHTTPHeaderField: "Accept-Language") }
        if let platform = configuration.platform { request.setValue(platform, forHTTPHeaderField: "X-Client-Platform") }
        if let version = configuration.appVersion { request.setValue(version, forHTTPHeaderField: "X-App-Version") }
        if !validators.isEmpty { request.setValue(validators.joined(separator: ", "), forHTTPHeaderField: "If-None-Match") }
        configuration.onEvent?(.requestSent(url: url, longPoll: wait != nil))

        let answer = try await session.exchange(request)
        switch answer.status {
        case 304:
            configuration.onEvent?(.notModified(etag: answer.header("ETag")))
            state.withLock { if $0.source != .server && $0.layout == shown { $0.source = .server } }
            return .notModified
        case 200:
            guard let etag = answer.header("ETag"), !etag.isEmpty else { throw .missingETag }
            let layout = try CompiledLayout.decode(answer.body)
            // An answer older than the layout shown changes nothing.
            guard publish(layout, body: answer.body, etag: etag) else { return .notModified }
            configuration.onEvent?(.updated(etag: etag))
            return .updated(layout)
        default:
            throw .unexpectedStatus(answer.status, detail: answer.problemDetail, retryAfter: answer.retryAfter)
        }
    }

    /// Stores a validated layout, then makes it current (also when storing fails: it is valid, and newer). An
    /// answer older than the current one (a lower version of the same layout, from a request that was slower
    /// than a later one) is dropped.
    /// - Returns: false when the layout was dropped as older.
    private func publish(_ layout: CompiledLayout, body: Data, etag: String) -> Bool {
        let stored: Result<Bool, TabClientError> = storing.withLock { _ in
            let current = state.withLock { $0 }
            if current.source == .server, current.layout.layout == layout.layout,
                let shown = current.layout.version, let arrived = layout.version, arrived < shown
            {
                return .success(false)
            }
            var outcome: Result<Bool, TabClientError> = .success(true)
            do throws(TabClientError) {
                try cache?.store(body: body, etag: etag)
            } catch {
                outcome = .failure(error)
            }
            state.withLock { $0 = State(layout: layout, validators: [etag], source: .server) }
            return outcome
        }
        switch stored {
        case .success(let published): return published
        case .failure(let error):
            configuration.onEvent?(.failed(error, retryIn: nil))
            return true
        }
    }

    /// Downloads `…/tabs/bundle` for the configuration's languages, platform and app version: what an app's
    /// build step ships (`curl -o Tabs.bundle.json`), and what a program without a bundle starts from.
    /// - Throws: ``TabClientError``.
    public static func downloadBundle(_ configuration: TabClientConfiguration) async throws(TabClientError) -> LayoutBundle {
        var request = URLRequest(url: configuration.bundleURL())
        request.timeoutInterval = configuration.requestTimeout.timeInterval
        request.setValue("application/json", forHTTPHeaderField: "Accept")
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
