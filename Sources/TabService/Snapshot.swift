import Compression
import Dispatch
import HashTreeCollections
import HeaderFields
import Logging
import MicroHTTPD
import Synchronization
import TabLayout
import TabPreview
import TabStore

/// The representations a client can ask for.
enum RepresentationFormat: UInt8, Sendable {
    /// The compiled document as canonical JSON.
    case json
    /// The compiled document as an XML property list.
    case plist
    /// Seed 000's `ApplicationHierarchy.plist` array.
    case legacyPlist
    /// The tab bar drawn as SVG (`…/tabs/preview.svg`).
    case preview

    var contentType: String {
        switch self {
        case .json: "application/json"
        case .plist, .legacyPlist: "application/x-plist"
        case .preview: "image/svg+xml"
        }
    }
}

/// Which variant of a layout a request selects. Every member is a small index, so the set of keys of a
/// layout is finite: locales × 7 platform choices × (2 × app-version bounds + 2) × 3 formats.
struct VariantKey: Hashable, Sendable {
    var locale: UInt16
    var platform: UInt8
    var versionClass: UInt16
    var format: RepresentationFormat
}

/// One coding of a representation: its own strong ETag (RFC 9110 §8.8.3: each coding is a different
/// representation) and the 200 and 304 responses every request for it shares.
final class CodedForm: Sendable {
    let coding: ContentCoding
    let etag: String
    let ok: PreparedResponse
    let notModified: PreparedResponse
    let bodyCount: Int

    /// `etag` parsed once, for the conditional-request comparisons.
    let entityTag: HeaderFields.EntityTag?

    init(coding: ContentCoding, body: [UInt8], etag: String, okHeaders: [HTTPHeader], sharedHeaders: [HTTPHeader]) throws(MicroHTTPDError) {
        self.coding = coding
        self.etag = etag
        self.entityTag = HeaderFields.EntityTag(etag)
        self.bodyCount = body.count
        var shared = sharedHeaders
        shared.insert(HTTPHeader("ETag", etag), at: 0)
        var headers = okHeaders
        if let token = coding.token { headers.append(HTTPHeader("Content-Encoding", token)) }
        ok = try PreparedResponse(status: 200, headers: headers + shared, body: body)
        notModified = try PreparedResponse(status: 304, headers: shared, body: body)
    }
}

/// One representation, built once: its codings (identity always; brotli and gzip when smaller), each with its
/// strong ETag and shared responses, and its `Last-Modified`.
final class Representation: Sendable {
    let forms: [CodedForm]
    /// The codings besides identity that it keeps.
    let available: AvailableCodings
    /// Unix seconds of the newest input of this representation (its layout, bases, and strings tables of its locale).
    let lastModifiedSeconds: Int64
    /// Whether a different content of this representation may carry the same `Last-Modified` second (two changes
    /// within one second): then `If-Modified-Since` for that second is answered 200, never a wrong 304.
    let lastModifiedIsAmbiguous: Bool
    /// The memory it holds, for the cache's bound: each form's body twice (the 200's and the 304's buffers) and
    /// ~2 KiB of headers, response objects, cache slot and allocator overhead per form.
    let cost: Int
    /// Set by each request that uses it, cleared by each sweep of the cache: a representation found clear was
    /// not asked for since the previous sweep (the second-chance rule).
    private let recentlyUsed = Atomic<Bool>(true)

    /// Builds this representation with its brotli form too (set while that form is still being made).
    let completer: (@Sendable () -> Representation?)?

    init(
        body: [UInt8], contentType: String, locale: String?, vary: String, lastModifiedSeconds: Int64, ambiguous: Bool,
        cacheControl: String, codings: [ContentCoding: [UInt8]] = [:], completer: (@Sendable () -> Representation?)? = nil
    ) throws(MicroHTTPDError) {
        self.completer = completer
        let etag = EntityTag.strong(for: body)
        self.lastModifiedSeconds = lastModifiedSeconds
        self.lastModifiedIsAmbiguous = ambiguous
        // What a 304 repeats (RFC 9110 §15.4.5): validators and caching fields, not representation metadata
        // such as Content-Language.
        let shared = [
            HTTPHeader("Cache-Control", cacheControl), HTTPHeader("Vary", vary),
            HTTPHeader("Last-Modified", UTCDateTime(unixSeconds: lastModifiedSeconds).httpDate),
        ]
        var okHeaders = [HTTPHeader("Content-Type", contentType)]
        if let locale { okHeaders.append(HTTPHeader("Content-Language", locale)) }
        var forms = [try CodedForm(coding: .identity, body: body, etag: etag, okHeaders: okHeaders, sharedHeaders: shared)]
        for coding in [ContentCoding.br, .gzip] {
            guard let coded = codings[coding], let token = coding.token, coded.count < body.count else { continue }
            // The identity tag with the coding's name inside the quotes: distinct, strong, and derived from the
            // content (never `…-gzip`, which the weak comparison of If-None-Match reads as Apache's suffix).
            let codedTag = String(etag.dropLast()) + "." + token + "\""
            forms.append(try CodedForm(coding: coding, body: coded, etag: codedTag, okHeaders: okHeaders, sharedHeaders: shared))
        }
        self.forms = forms
        var available: AvailableCodings = []
        for form in forms {
            if form.coding == .br { available.insert(.br) } else if form.coding == .gzip { available.insert(.gzip) }
        }
        self.available = available
        self.cost = forms.reduce(0) { $0 + 2 * $1.bodyCount + 2048 }
    }

    /// The identity form (every representation has one).
    var identity: CodedForm { forms[0] }

    /// The form for `coding`, when this representation keeps one.
    func form(_ coding: ContentCoding) -> CodedForm? { forms.first { $0.coding == coding } }

    /// The form whose tag the client's `If-None-Match` names, when the client accepts its coding: a client that holds
    /// the gzip form (made first) keeps getting 304 for it after the brotli form lands. Else `preferred`.
    func form(heldBy ifNoneMatch: UnsafeBufferPointer<UInt8>?, acceptEncoding: UnsafeBufferPointer<UInt8>?, preferred: CodedForm)
        -> CodedForm
    {
        guard let ifNoneMatch, forms.count > 1 else { return preferred }
        if let tag = preferred.entityTag, EntityTagList.matchesWeakly(CollectionOfOne(ifNoneMatch), current: tag) { return preferred }
        for form in forms where form !== preferred {
            guard let tag = form.entityTag, EntityTagList.matchesWeakly(CollectionOfOne(ifNoneMatch), current: tag) else { continue }
            let single: AvailableCodings = form.coding == .br ? .br : form.coding == .gzip ? .gzip : []
            let accepted = acceptEncoding.map { AcceptEncoding.choose(CollectionOfOne($0), available: single) } ?? .identity
            if accepted == form.coding { return form }
        }
        return preferred
    }

    /// The form for an `Accept-Encoding` field (nil: none sent, identity); nil when the client accepts none (406).
    func form(acceptEncoding field: UnsafeBufferPointer<UInt8>?) -> CodedForm? {
        guard let field else { return forms[0] }
        return AcceptEncoding.choose(CollectionOfOne(field), available: available).flatMap(form)
    }

    /// Notes a request for it: a read of the bit, and a write only the first time after a sweep.
    func markUsed() {
        if !recentlyUsed.load(ordering: .relaxed) { recentlyUsed.store(true, ordering: .relaxed) }
    }

    /// Whether a request used it since the last call (and clears that).
    func takeUsed() -> Bool { recentlyUsed.exchange(false, ordering: .relaxed) }
}

/// The memory that cached representations hold across every layout, and its bound. Past the limit, the
/// service sweeps every layout's cache and drops the representations that no request used since the sweep
/// before (second chance, as in CLOCK); they are compiled again if asked for.
final class VariantBudget: Sendable {
    /// Bytes that cached representations may hold before a sweep.
    let limit: Int
    private let held = Atomic<Int>(0)
    private let count = Atomic<Int>(0)
    private let sweeping = Atomic<Bool>(false)
    let evictions = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    var bytes: Int { held.load(ordering: .relaxed) }
    var representations: Int { count.load(ordering: .relaxed) }

    /// Counts a cached representation; true when the total is past the limit and the caller is the one to
    /// sweep (one sweep at a time; ``sweepFinished()`` ends it).
    func added(_ representation: Representation) -> Bool {
        count.add(1, ordering: .relaxed)
        let total = held.add(representation.cost, ordering: .relaxed).newValue
        return total > limit && sweeping.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
    }

    func removed(_ representation: Representation) {
        count.subtract(1, ordering: .relaxed)
        held.subtract(representation.cost, ordering: .relaxed)
    }

    func sweepFinished() { sweeping.store(false, ordering: .releasing) }
}

/// A layout ready to serve: resolved once, its variants compiled on first request and kept.
final class LayoutEntry: Sendable {
    let resolved: ResolvedLayout
    /// The locales its tables (own and global) have, sorted: the candidates for `Accept-Language`.
    let locales: [String]
    let defaultLocaleIndex: Int
    /// Chooses among `locales` for an `Accept-Language` (shared by every layout with the same locales).
    let negotiator: LocaleNegotiator
    /// Milliseconds of the newest layout record among its own and its bases'.
    let layoutModifiedMillis: Int64
    /// Milliseconds of each global strings table's current version, by locale.
    let stringsModifiedMillis: [String: Int64]
    /// The account's previous version was committed within the same second as the current one.
    let changedTwiceInOneSecond: Bool
    /// The request headers that choose among this layout's representations: `Accept` and `Accept-Language`
    /// always, the platform and app-version headers only when some tab is targeted by them.
    let vary: String
    let globalStrings: [String: StringsTable]
    private let variants = Mutex<[VariantKey: Representation]>([:])
    private let budget: VariantBudget
    /// Variants kept per layout; beyond it an arbitrary one is dropped (the global bound is ``VariantBudget``).
    static let variantLimit = 512

    init(
        resolved: ResolvedLayout, globalStrings: [String: StringsTable], layoutModifiedMillis: Int64,
        stringsModifiedMillis: [String: Int64], changedTwiceInOneSecond: Bool, budget: VariantBudget
    ) {
        self.resolved = resolved
        self.globalStrings = globalStrings
        self.budget = budget
        var locales = Set(resolved.strings.keys).union(globalStrings.keys)
        locales.insert(resolved.defaultLocale)
        self.locales = locales.sorted()
        self.defaultLocaleIndex = self.locales.firstIndex(of: resolved.defaultLocale) ?? 0
        self.negotiator = LocaleNegotiator.shared(for: self.locales)
        self.layoutModifiedMillis = layoutModifiedMillis
        self.stringsModifiedMillis = stringsModifiedMillis
        self.changedTwiceInOneSecond = changedTwiceInOneSecond
        var vary = "Accept, Accept-Language, Accept-Encoding"
        if Self.targetsPlatforms(resolved.tabs) { vary += ", X-Client-Platform" }
        if !resolved.versionBounds.isEmpty { vary += ", X-App-Version" }
        self.vary = vary
    }

    deinit {
        let budget = self.budget
        variants.withLock { cache in for representation in cache.values { budget.removed(representation) } }
    }

    /// The index of the locale for `?locale=` (`fr-CA` falls back to `fr`), else the default locale's.
    func localeIndex(asked: String) -> Int { negotiator.table.match(asked) ?? defaultLocaleIndex }

    /// The index of the locale for an `Accept-Language` field (nil: none sent), else the default locale's.
    func localeIndex(acceptLanguage field: UnsafeBufferPointer<UInt8>?) -> Int {
        guard let field else { return defaultLocaleIndex }
        return negotiator.choose(field) ?? defaultLocaleIndex
    }

    /// The newest input of a representation in `locale`: the layout records, and the strings tables of that
    /// locale, its language and the default locale (a change to another locale's table does not move it).
    func lastModifiedMillis(locale: String) -> Int64 {
        var newest = layoutModifiedMillis
        for table in [locale, LocaleMatcher.language(of: locale), resolved.defaultLocale] {
            newest = max(newest, stringsModifiedMillis[table] ?? 0)
        }
        return newest
    }

    /// Drops every cached representation; the number dropped.
    func dropAll() -> Int {
        let budget = self.budget
        return variants.withLock { cache in
            for representation in cache.values { budget.removed(representation) }
            defer { cache = [:] }
            return cache.count
        }
    }

    /// Drops the representations not used since the previous sweep; the number dropped.
    func sweep() -> Int {
        let budget = self.budget
        return variants.withLock { cache in
            var dropped = 0
            for (key, representation) in cache where !representation.takeUsed() {
                cache[key] = nil
                budget.removed(representation)
                dropped += 1
            }
            return dropped
        }
    }

    private static func targetsPlatforms(_ tabs: [TabSpec]) -> Bool {
        tabs.contains { $0.platforms != nil || targetsPlatforms($0.children) }
    }

    /// The app-version class of `version`: which side of every bound it lies on (0 when the client gave none).
    func versionClass(_ version: AppVersion?) -> UInt16 {
        guard let version else { return 0 }
        let bounds = resolved.versionBounds
        var below = 0
        var equal = 0
        for bound in bounds {
            if bound < version { below += 1 } else if bound == version { equal = 1 }
        }
        return UInt16(1 + 2 * below + equal)
    }

    /// The representation for `key`, compiled now if this is its first request (or was dropped since), and
    /// whether the cache is now past its bound and the caller should sweep it.
    /// - Parameter brotliNow: the client accepts br and not gzip (a cache in front that reduced `Accept-Encoding` to
    ///   `br`): a brotli form still being made is made now, for this request, so that no cache stores identity for it.
    func representation(
        _ key: VariantKey, platform: Platform?, appVersion: AppVersion?, cacheControl: String, metrics: Metrics, brotliNow: Bool = false
    ) throws(RepresentationError) -> (Representation, sweep: Bool) {
        if let hit = variants.withLock({ $0[key] }) {
            metrics.cacheHits.add(1, ordering: .relaxed)
            hit.markUsed()
            return (brotliNow ? completed(key, hit) : hit, false)
        }
        metrics.cacheMisses.add(1, ordering: .relaxed)
        let locale = locales[Int(key.locale)]
        let compiled = LayoutCompiler.compile(
            resolved, for: ClientContext(locale: locale, platform: platform, appVersion: appVersion), globalStrings: globalStrings)
        let body: [UInt8]
        switch key.format {
        case .json: body = CanonicalJSON.encode(compiled.document)
        case .plist: body = PropertyListXML.encode(compiled.document)
        case .legacyPlist: body = PropertyListXML.encode(compiled.legacy)
        case .preview:
            do throws(TabPreviewError) {
                body = try TabPreview.svg(compiled, selected: nil)
            } catch {
                throw .preview(error)
            }
        }
        // gzip -9 of a layout takes tens of microseconds: made now. brotli at quality 11 takes milliseconds: made on
        // the compression queue, never on a request's thread; until it lands, br clients get gzip or identity.
        let gzipped = Compressor.gzipped(body)
        let lastModified = lastModifiedMillis(locale: locale) / 1000
        let vary = self.vary
        let ambiguous = changedTwiceInOneSecond
        let make: @Sendable ([ContentCoding: [UInt8]]) throws(RepresentationError) -> Representation = {
            codings throws(RepresentationError) in
            try RepresentationError.wrap { () throws(MicroHTTPDError) -> Representation in
                try Representation(
                    body: body, contentType: key.format.contentType, locale: locale, vary: vary, lastModifiedSeconds: lastModified,
                    ambiguous: ambiguous, cacheControl: cacheControl, codings: codings)
            }
        }
        let completer: @Sendable () -> Representation? = {
            guard let brotli = Compressor.brotlied(body) else { return nil }
            var codings: [ContentCoding: [UInt8]] = [.br: brotli]
            codings[.gzip] = gzipped
            return try? make(codings)
        }
        let built = try RepresentationError.wrap { () throws(MicroHTTPDError) -> Representation in
            try Representation(
                body: body, contentType: key.format.contentType, locale: locale, vary: vary, lastModifiedSeconds: lastModified,
                ambiguous: ambiguous, cacheControl: cacheControl, codings: gzipped.map { [.gzip: $0] } ?? [:], completer: completer)
        }
        let budget = self.budget
        let (cached, sweep) = variants.withLock { cache -> (Representation, Bool) in
            if let raced = cache[key] { return (raced, false) }
            if cache.count >= Self.variantLimit, let victim = cache.first {
                cache[victim.key] = nil
                budget.removed(victim.value)
            }
            cache[key] = built
            return (built, budget.added(built))
        }
        if cached === built {
            if brotliNow { return (completed(key, built), sweep) }
            // Weak: an entry dropped meanwhile (a newer snapshot, a sweep) needs no brotli form.
            Compressor.queue.async { [weak self] in _ = self?.completed(key, built) }
        }
        return (cached, sweep)
    }

    /// The cached representation for `key` when it can be served as it is: cached, and complete when the client
    /// needs the brotli form now (nil: it must be built, off the request's thread).
    func ready(_ key: VariantKey, brotliNow: Bool, metrics: Metrics) -> Representation? {
        guard let hit = variants.withLock({ $0[key] }), !brotliNow || hit.completer == nil else { return nil }
        metrics.cacheHits.add(1, ordering: .relaxed)
        hit.markUsed()
        return hit
    }

    /// `partial` with its brotli form made (now, on the caller's thread), and swapped into the cache in its place.
    func completed(_ key: VariantKey, _ partial: Representation) -> Representation {
        guard let completer = partial.completer else { return partial }
        let current = variants.withLock { $0[key] }
        guard current === partial else { return current ?? partial }  // completed or dropped meanwhile
        guard let full = completer() else { return partial }
        let budget = self.budget
        return variants.withLock { cache in
            guard cache[key] === partial else { return cache[key] ?? full }
            cache[key] = full
            budget.removed(partial)
            // A sweep is started by requests' own additions; this swap only accounts for the bytes.
            if budget.added(full) { budget.sweepFinished() }
            return full
        }
    }
}

/// Everything the read path needs, immutable; the publisher builds a new one for each change and swaps it in.
///
/// The per-account maps are persistent hash tries: a snapshot after one write shares every untouched
/// account's node with the one before it, so a write costs O(log accounts + dependents), not O(accounts).
final class Snapshot: Sendable {
    /// The snapshot's contents, as one value so that a change copies it, edits what it changes, and builds anew.
    struct Contents: Sendable {
        /// Accounts with a layout of their own (`default` among them when it exists), resolved on first request.
        var entries: TreeDictionary<String, LazyEntry> = [:]
        /// Every account's current document (for resolving overlays), parsed on first use.
        var documents: TreeDictionary<String, LazyDocument> = [:]
        /// The accounts whose document names each account in `extends` (the reverse of `extends`).
        var extendedBy: TreeDictionary<String, Set<String>> = [:]
        var globalStrings: [String: StringsTable] = [:]
        var stringsRecords: [String: StoredStrings] = [:]
        /// Accounts whose current version was committed within the same second as the one before it.
        var changedTwiceInOneSecond: Set<String> = []
        /// The publication that made it: grows by one with every snapshot published.
        var sequence: UInt64 = 0
    }

    let contents: Contents
    /// The bound on the representations that entries cache (one for the service, shared by its snapshots).
    let budget: VariantBudget

    init(_ contents: Contents, budget: VariantBudget) {
        self.contents = contents
        self.budget = budget
    }

    var entries: TreeDictionary<String, LazyEntry> { contents.entries }
    var documents: TreeDictionary<String, LazyDocument> { contents.documents }
    /// The current record of an account with a layout of its own.
    func record(_ account: String) -> StoredVersion? { contents.documents[account]?.record }
    var extendedBy: TreeDictionary<String, Set<String>> { contents.extendedBy }
    var globalStrings: [String: StringsTable] { contents.globalStrings }
    var stringsRecords: [String: StoredStrings] { contents.stringsRecords }
    var changedTwiceInOneSecond: Set<String> { contents.changedTwiceInOneSecond }
    var sequence: UInt64 { contents.sequence }

    /// The entry that serves `account`: its own, else `default`'s.
    /// The entry that serves `account`: its own, else `default`'s (also when its own no longer compiles).
    func entry(for account: String) -> LayoutEntry? { entries[account]?.value ?? entries["default"]?.value }

    /// Accounts whose layout extends `account`, directly or through others.
    func dependents(of account: String) -> Set<String> {
        var result: Set<String> = []
        var frontier = [account]
        while let next = frontier.popLast() {
            for name in extendedBy[next] ?? [] where name != account && result.insert(name).inserted {
                frontier.append(name)
            }
        }
        return result
    }

    /// Resolves `account`'s document against this snapshot's documents.
    func resolve(_ account: String, version: Int?, document: LayoutDocument, strict: Bool) throws(LayoutError) -> ResolvedLayout {
        try LayoutResolver.resolve(name: account, version: version, document: document, strict: strict) { documents[$0]?.document }
    }
}

/// Why a representation could not be built.
enum RepresentationError: Error, CustomStringConvertible {
    case response(MicroHTTPDError)
    case preview(TabPreviewError)

    static func wrap<T>(_ body: () throws(MicroHTTPDError) -> T) throws(RepresentationError) -> T {
        do throws(MicroHTTPDError) {
            return try body()
        } catch {
            throw .response(error)
        }
    }

    var description: String {
        switch self {
        case .response(let error): "\(error)"
        case .preview(let error): "\(error)"
        }
    }
}

/// The compressed forms of a representation: brotli at quality 11 and gzip at level 9, the levels a careful operator
/// precompresses static files with. A coding that fails is left out: the representation is served in the others.
enum Compressor {
    /// Where brotli runs: off libmicrohttpd's threads and off Swift's cooperative pool, one body at a time.
    static let queue = DispatchQueue(label: "tabserver.compression", qos: .utility)

    static func gzipped(_ body: [UInt8]) -> [UInt8]? { try? gzip(body, level: 9) }

    static func brotlied(_ body: [UInt8]) -> [UInt8]? { try? brotli(body, quality: 11) }
}

/// `Accept-Language` decisions for one set of locales, remembered by the field's exact bytes (the millionth
/// request with the same header costs a hash lookup). Layouts with the same locales share one (most do), so the
/// caches stay few; past ``maximumShared`` sets, new ones decide without a cache.
final class LocaleNegotiator: Sendable {
    let table: LocaleTable
    private let decisions: DecisionCache<Int>?

    static let maximumShared = 1024
    private static let registry = Mutex<[[String]: LocaleNegotiator]>([:])

    private init(_ locales: [String], cached: Bool) {
        table = LocaleTable(locales)
        decisions = cached ? DecisionCache<Int>(capacity: 256, maximumKeyCount: 256) : nil
    }

    /// The negotiator for `locales` (sorted), shared when possible.
    static func shared(for locales: [String]) -> LocaleNegotiator {
        registry.withLock { registry in
            if let known = registry[locales] { return known }
            guard registry.count < maximumShared else { return LocaleNegotiator(locales, cached: false) }
            let made = LocaleNegotiator(locales, cached: true)
            registry[locales] = made
            return made
        }
    }

    /// The index of the chosen locale, nil for the layout's default.
    func choose(_ field: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let decisions else { return AcceptLanguage.choose(CollectionOfOne(field), table: table) }
        let index = decisions.decision(CollectionOfOne(field)) { AcceptLanguage.choose(CollectionOfOne(field), table: table) ?? -1 }
        return index < 0 ? nil : index
    }
}

/// An account's current document, parsed on first use (start-up reads every record, but parses none).
final class LazyDocument: Sendable {
    let record: StoredVersion
    private let parsed: Mutex<LayoutDocument??>

    /// A record whose source is parsed when first needed.
    init(record: StoredVersion) {
        self.record = record
        parsed = Mutex(nil)
    }

    /// A record whose document is already parsed (a write parses it to validate it).
    init(record: StoredVersion, document: LayoutDocument) {
        self.record = record
        parsed = Mutex(.some(document))
    }

    /// The document; nil when the stored source no longer reads.
    var document: LayoutDocument? {
        if let known = parsed.withLock({ $0 }) { return known }
        let document = try? LayoutSource.parse(record.source, format: sourceFormat(record.contentType))
        parsed.withLock { $0 = .some(document) }
        return document
    }

    /// The account it extends: recorded by the store for versions written since it recorded it (`""`: none),
    /// else read from the source.
    var extends: String? {
        if let recorded = record.extends { return recorded.isEmpty ? nil : recorded }
        return document?.extends
    }
}

/// What resolving an account needs from the snapshot it was published in: one per publication, shared by the
/// entries it made (an entry kept by a later snapshot was not affected by its change, so its inputs are the same).
final class ResolutionContext: Sendable {
    let documents: TreeDictionary<String, LazyDocument>
    let globalStrings: [String: StringsTable]
    let stringsModified: [String: Int64]
    let changedTwiceInOneSecond: Set<String>
    let budget: VariantBudget
    let logger: Logger

    init(_ contents: Snapshot.Contents, budget: VariantBudget, logger: Logger) {
        documents = contents.documents
        globalStrings = contents.globalStrings
        stringsModified = contents.stringsRecords.mapValues(\.createdAtMillis)
        changedTwiceInOneSecond = contents.changedTwiceInOneSecond
        self.budget = budget
        self.logger = logger
    }
}

/// An account's layout ready to serve, resolved on its first request and kept until a sweep finds it unused
/// (1,000,000 accounts start in seconds: nothing is parsed or resolved before it is asked for).
final class LazyEntry: Sendable {
    let account: String
    private let context: ResolutionContext
    private let state = Mutex<State>(.unresolved)
    private let recentlyUsed = Atomic<Bool>(true)

    enum State {
        case unresolved
        case ready(LayoutEntry)
        /// The source no longer reads or resolves against the store (the account falls back to `default`).
        case failed
    }

    init(account: String, context: ResolutionContext) {
        self.account = account
        self.context = context
    }

    /// The resolved entry (resolving it now on first use), nil when it cannot be resolved.
    var value: LayoutEntry? {
        if !recentlyUsed.load(ordering: .relaxed) { recentlyUsed.store(true, ordering: .relaxed) }
        switch state.withLock({ $0 }) {
        case .ready(let entry): return entry
        case .failed: return nil
        case .unresolved: break
        }
        let built = resolve()
        return state.withLock { state in
            switch state {
            case .ready(let raced): return raced
            case .failed: return nil
            case .unresolved:
                state = built.map { .ready($0) } ?? .failed
                return built
            }
        }
    }

    /// The entry if it was resolved (for sweeping; never resolves).
    var resolved: LayoutEntry? {
        if case .ready(let entry) = state.withLock({ $0 }) { return entry }
        return nil
    }

    private func resolve() -> LayoutEntry? {
        guard let lazy = context.documents[account], let document = lazy.document else {
            context.logger.error("layout \(account) no longer reads")
            return nil
        }
        let record = lazy.record
        do {
            let resolved = try LayoutResolver.resolve(name: account, version: record.version, document: document, strict: false) {
                context.documents[$0]?.document
            }
            var modified = record.createdAtMillis
            for base in resolved.bases { modified = max(modified, context.documents[base]?.record.createdAtMillis ?? 0) }
            return LayoutEntry(
                resolved: resolved, globalStrings: context.globalStrings, layoutModifiedMillis: modified,
                stringsModifiedMillis: context.stringsModified, changedTwiceInOneSecond: context.changedTwiceInOneSecond.contains(account),
                budget: context.budget)
        } catch {
            context.logger.error("layout \(account) v\(record.version) does not compile against the current store: \(error)")
            return nil
        }
    }

    /// Drops what no request used since the previous sweep: its variants, and the resolved entry itself when it
    /// was not asked for at all (resolved again on its next request). The number of representations dropped.
    func sweep() -> Int {
        guard let entry = resolved else { return 0 }
        if !recentlyUsed.exchange(false, ordering: .relaxed) {
            state.withLock { $0 = .unresolved }
            return entry.dropAll()
        }
        return entry.sweep()
    }
}
