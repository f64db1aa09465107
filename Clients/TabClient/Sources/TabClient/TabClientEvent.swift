import Foundation

/// Which layout something concerns: its name, `version`, `ETag` and where the client got it.
public struct LayoutReference: Sendable, Hashable, CustomStringConvertible {
    /// The account the layout was compiled from (``CompiledLayout/layout``).
    public var layout: String
    /// ``CompiledLayout/version``, when the server has one.
    public var version: Int?
    /// Its entity tag (a bundled layout has one per content coding: the first is given).
    public var etag: String?
    /// Where the client got it.
    public var source: TabClient.Source

    public init(layout: String, version: Int?, etag: String?, source: TabClient.Source) {
        self.layout = layout
        self.version = version
        self.etag = etag
        self.source = source
    }

    init(_ compiled: CompiledLayout, etag: String?, source: TabClient.Source) {
        self.init(layout: compiled.layout, version: compiled.version, etag: etag, source: source)
    }

    /// `jack v21 "etag" (cache)`.
    public var description: String {
        "\(layout) v\(version.map(String.init) ?? "?") \(etag ?? "no ETag") (\(source))"
    }
}

/// What happened to one request of a ``TabClient`` (see ``TabClientConfiguration/onEvent``), naming the layouts
/// it concerns.
public enum TabClientEvent: Sendable, Equatable {
    /// A request went out to revalidate `shown` (its ETags are the `If-None-Match`); `longPoll` when the server
    /// may hold it.
    case requestSent(url: URL, longPoll: Bool, shown: LayoutReference)
    /// `304`: `shown` is the server's layout (its source is now ``TabClient/Source/server``).
    case notModified(LayoutReference)
    /// `200` carrying the ETag of the layout shown (a cache on the way that does not answer `304`): nothing
    /// changed, nothing was written to disk.
    case unchanged(LayoutReference)
    /// `200` with a valid layout, now shown and stored, in place of `replacing`; or, in manifest mode, the prefetched
    /// candidate shown when its step came (its source is where it was fetched from: this run's server, or the cache).
    case updated(LayoutReference, replacing: LayoutReference)
    /// `200` with a lower `version` of the layout shown (a lagging replica or cache), or a prefetched candidate whose step
    /// came when a newer version of it was shown: dropped, `kept` stays.
    case droppedOlder(LayoutReference, kept: LayoutReference)
    /// Manifest mode: a manifest with a lower `revision` than one already followed (a lagging cache or replica):
    /// ignored, the newer one stays in force.
    case droppedOlderManifest(revision: Int, kept: Int)
    /// The answer was refused (error status, garbage, invalid layout, a signature that does not verify:
    /// ``TabClientError/invalidSignature(_:)``) or could not be stored (or the bundle's signature did not verify); `kept` is the layout
    /// shown after it. `retryIn` is the delay before ``TabClient/updates()`` asks again (nil for
    /// ``TabClient/refresh()`` and for a failed cache write).
    case failed(TabClientError, retryIn: Duration?, kept: LayoutReference)
    /// The cache file could not be used and was removed; `shown` is the bundled layout shown instead. (Or the prefetch
    /// file: its candidate is not kept, and `shown` is the layout shown.)
    case cacheIgnored(TabClientError, shown: LayoutReference)
    /// The launch guard went back from `version` (never rendered: `reason` is `launchAttempts` or `readyTimeout`) to the
    /// last layout that rendered, else the bundle, and blocked it; `shown` is the layout shown now.
    case reverted(version: Int, reason: String, shown: LayoutReference)
    /// An answer (or a manifest's choice, or a prefetch) of a blocked or revoked version: refused, nothing changed.
    case blocked(LayoutReference, kept: LayoutReference)
    /// The server said `version` is revoked (its list, or a `410 Gone` to `…/tabs?version=N`, also for a version not shown
    /// yet): dropped from the cache, the prefetch and the layout shown; `shown` is the layout shown now.
    case revoked(version: Int, shown: LayoutReference)
}
