import Logging
import MicroHTTPD
import Synchronization
import TabLayout
import TabStore

/// How the service behaves; only the executable reads flags and the environment to fill it.
public struct ServiceConfiguration: Sendable {
    /// `Cache-Control` of client-plane answers.
    public var cacheControl: String
    /// Admin bearer tokens and the name recorded as the author of each one's changes.
    public var adminTokens: [(name: String, token: String)]
    /// Bytes that compiled representations may hold across all layouts before the least recently used are
    /// dropped (they are compiled again when asked for).
    public var variantCacheBytes: Int

    public init(
        cacheControl: String = "no-cache", adminTokens: [(name: String, token: String)] = [], variantCacheBytes: Int = 512 << 20
    ) {
        self.cacheControl = cacheControl
        self.adminTokens = adminTokens
        self.variantCacheBytes = variantCacheBytes
    }
}

/// The tab-layout service: the client plane served from an immutable snapshot of compiled layouts, the
/// management plane writing through the store (off libmicrohttpd's threads) and swapping in a new snapshot.
public final class TabService: HTTPHandler {
    let store: any TabStore
    let configuration: ServiceConfiguration
    let logger: Logger
    let metrics = Metrics()
    let current: Mutex<Snapshot>
    let budget: VariantBudget
    private let tokens: [(name: String, token: [UInt8])]
    let requestIDs = RequestIDs()

    /// Loads every current layout and strings table from `store` and compiles the first snapshot.
    /// - Throws: ``StoreError`` when the store cannot be read.
    public init(store: any TabStore, configuration: ServiceConfiguration, logger: Logger) async throws(StoreError) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.tokens = configuration.adminTokens.map { ($0.name, Array($0.token.utf8)) }
        let layouts = try await store.currentLayouts()
        let strings = try await store.currentStrings()
        let budget = VariantBudget(limit: configuration.variantCacheBytes)
        self.budget = budget
        current = Mutex(Snapshot.build(layouts: layouts, strings: strings, budget: budget, logger: logger))
        followStoreChanges()
    }

    var snapshot: Snapshot { current.withLock { $0 } }

    /// Drops the cached representations that no request used since the previous sweep, across every layout
    /// (off libmicrohttpd's threads; the cache is past its bound when this runs).
    func sweepVariants() {
        var dropped = 0
        for entry in snapshot.entries.values { dropped += entry.sweep() }
        budget.evictions.add(dropped, ordering: .relaxed)
        budget.sweepFinished()
        logger.debug("variant cache swept: \(dropped) dropped, \(budget.bytes) bytes held (limit \(budget.limit))")
    }

    /// Accounts with a compiled layout of their own.
    public var layoutCount: Int { snapshot.entries.count }

    // MARK: HTTPHandler

    public func handle(_ request: HTTPRequest) -> HTTPReply {
        let started = nanoseconds()
        let (route, reply) = dispatch(request)
        switch reply {
        case .prepared(let prepared):
            // The hot path: a shared response, so no per-request header or log line (metrics count it).
            metrics.record(route, status: prepared.status, nanoseconds: nanoseconds() &- started)
            return reply
        case .response(var response):
            let context = RequestContext(request, route: route, requestIDs: requestIDs)
            response.headers.append(HTTPHeader("Request-Id", context.id))
            metrics.record(route, status: response.status, nanoseconds: nanoseconds() &- started)
            log(context, response)
            return .response(response)
        case .deferred(let work):
            let context = RequestContext(request, route: route, requestIDs: requestIDs)
            let metrics = self.metrics
            return .deferred {
                var response = await work()
                response.headers.append(HTTPHeader("Request-Id", context.id))
                metrics.record(route, status: response.status, nanoseconds: nanoseconds() &- started)
                self.log(context, response)
                return response
            }
        }
    }

    /// Writes and failures get a structured log line with their request id; reads are counted, not logged.
    private func log(_ context: RequestContext, _ response: HTTPResponse) {
        let metadata: Logger.Metadata = [
            "request-id": "\(context.id)", "method": "\(context.method)", "path": "\(context.path)",
            "status": "\(response.status)",
        ]
        if response.status >= 500 {
            logger.error("request failed", metadata: metadata)
        } else if context.isWrite && response.status < 400 {
            var details = metadata
            if let version = response.headers.first(where: { $0.name == "Layout-Version" }) { details["version"] = "\(version.value)" }
            logger.info("change committed", metadata: details)
        } else {
            logger.debug("request answered", metadata: metadata)
        }
    }

    public func reject(_ violation: RequestLimitViolation) -> HTTPResponse {
        switch violation {
        case .headerBlockTooLarge(let limit):
            metrics.record(.unknown, status: 431, nanoseconds: 0)
            return Problem(
                status: 431, slug: "header-too-large", title: "Request Header Fields Too Large",
                detail: "the request line and header fields exceed \(limit) bytes"
            ).response
        case .bodyTooLarge(let limit):
            metrics.record(.unknown, status: 413, nanoseconds: 0)
            return Problem(status: 413, slug: "too-large", title: "Content Too Large", detail: "the body exceeds \(limit) bytes")
                .response
        }
    }

    private static let accountsPrefix = Array("/v1/accounts/".utf8)
    private static let tabsSuffix = Array("tabs".utf8)
    private static let hierarchySuffix = Array("ApplicationHierarchy.plist".utf8)

    private func dispatch(_ request: HTTPRequest) -> (Route, HTTPReply) {
        let path = request.pathBytes
        if path.starts(with: Self.accountsPrefix) {
            let rest = UnsafeBufferPointer(rebasing: path[Self.accountsPrefix.count...])
            guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else {
                return (.unknown, .response(Problem.notFound("no resource at \(request.path)").response))
            }
            let account = UnsafeBufferPointer(rebasing: rest[..<slash])
            let tail = UnsafeBufferPointer(rebasing: rest[(slash + 1)...])
            if tail.elementsEqual(Self.tabsSuffix) {
                return (.tabs, serveTabs(request, account: account, format: nil))
            }
            if tail.elementsEqual(Self.hierarchySuffix) {
                return (.hierarchy, serveTabs(request, account: account, format: .legacyPlist))
            }
            return management(request, account: account, tail: String(decoding: tail, as: UTF8.self))
        }
        switch request.path {
        case "/healthz":
            return (.healthz, onlyGet(request) ?? .response(json(200, ["status": .string("ok")])))
        case "/readyz":
            if let refused = onlyGet(request) { return (.readyz, refused) }
            let store = self.store
            return (
                .readyz,
                .deferred {
                    await store.ping()
                        ? json(200, ["status": .string("ready")])
                        : Problem(status: 503, slug: "store-unreachable", title: "Service Unavailable", detail: "the store does not answer")
                            .response
                }
            )
        case "/metrics":
            if let refused = onlyGet(request) { return (.metrics, refused) }
            let text = metrics.render(snapshotEntries: snapshot.entries.count, budget: budget)
            return (
                .metrics,
                .response(
                    HTTPResponse(
                        status: 200, headers: [HTTPHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                        body: Array(text.utf8)))
            )
        case "/openapi.yaml":
            return (
                .openapi,
                onlyGet(request)
                    ?? .response(
                        HTTPResponse(
                            status: 200, headers: [HTTPHeader("Content-Type", "application/yaml")], body: Array(OpenAPIDocument.yaml.utf8)))
            )
        case "/v1/accounts":
            return (.accounts, listAccounts(request))
        case "/v1/validate":
            return (.validate, validate(request))
        default:
            if request.path.hasPrefix("/v1/strings/") {
                return (.strings, strings(request, locale: String(request.path.dropFirst("/v1/strings/".count))))
            }
            return (.unknown, .response(Problem.notFound("no resource at \(request.path)").response))
        }
    }

    func onlyGet(_ request: HTTPRequest) -> HTTPReply? {
        request.method == .get || request.method == .head ? nil : .response(Problem.methodNotAllowed("GET, HEAD").response)
    }

    // MARK: Client plane

    private static let jsonOffers: [(RepresentationFormat, String)] = [(.json, "application/json"), (.plist, "application/x-plist")]
    private static let legacyOffers: [(RepresentationFormat, String)] = [(.legacyPlist, "application/x-plist")]

    /// `GET|HEAD /v1/accounts/{account}/tabs` and `…/ApplicationHierarchy.plist`: a lookup in the snapshot,
    /// the variant compiled only on its first request, a 304 decided from the ETag alone.
    private func serveTabs(_ request: HTTPRequest, account accountBytes: UnsafeBufferPointer<UInt8>, format legacy: RepresentationFormat?)
        -> HTTPReply
    {
        if let refused = onlyGet(request) { return refused }
        guard isValidAccountName(String(decoding: accountBytes, as: UTF8.self)) else {
            return .response(Problem.invalidAccount.response)
        }
        let account = String(decoding: accountBytes, as: UTF8.self)
        guard let entry = snapshot.entry(for: account) else {
            return .response(Problem.notFound("account '\(account)' has no layout and there is no default layout").response)
        }
        let accept = request.header("Accept")
        let format: RepresentationFormat
        if legacy == nil, accept == nil {
            format = .json
        } else {
            guard let chosen = Negotiation.choose(accept: accept, offers: legacy == nil ? Self.jsonOffers : Self.legacyOffers) else {
                let offered = legacy == nil ? "application/json or application/x-plist" : "application/x-plist"
                return .response(
                    Problem(
                        status: 406, slug: "not-acceptable", title: "Not Acceptable", detail: "this resource is available as \(offered)"
                    ).response)
            }
            format = chosen
        }
        let locale: Int
        if let asked = request.query("locale") {
            locale = LocaleMatcher.match(asked, entry.locales).flatMap { entry.locales.firstIndex(of: $0) } ?? entry.defaultLocaleIndex
        } else if let languages = request.header("Accept-Language") {
            let chosen = LocaleMatcher.choose(acceptLanguage: languages, available: entry.locales, fallback: entry.resolved.defaultLocale)
            locale = entry.locales.firstIndex(of: chosen) ?? entry.defaultLocaleIndex
        } else {
            locale = entry.defaultLocaleIndex
        }
        var platform: Platform?
        if let name = request.query("platform") ?? request.header("X-Client-Platform") {
            guard let known = Platform(rawValue: name.lowercased()) else {
                return .response(
                    Problem.badRequest("platform '\(name)' is not one of \(Platform.allCases.map(\.rawValue).joined(separator: ", "))")
                        .response)
            }
            platform = known
        }
        var appVersion: AppVersion?
        if let text = request.query("appVersion") ?? request.header("X-App-Version") {
            guard let version = AppVersion(text) else {
                return .response(Problem.badRequest("app version '\(text)' is not a dotted version such as 2.1 or 3.0.2").response)
            }
            appVersion = version
        }
        let key = VariantKey(
            locale: UInt16(locale), platform: platform.map { UInt8(Platform.allCases.firstIndex(of: $0)! + 1) } ?? 0,
            versionClass: entry.versionClass(appVersion), format: legacy ?? format)
        let representation: Representation
        do {
            let sweep: Bool
            (representation, sweep) = try entry.representation(
                key, platform: platform, appVersion: appVersion, cacheControl: configuration.cacheControl, metrics: metrics)
            if sweep { Task.detached { self.sweepVariants() } }
        } catch {
            logger.error("building a representation of \(entry.resolved.name) failed: \(error)")
            return .response(Problem.internalError.response)
        }
        let notModified: Bool? = request.withHeader("If-None-Match") { field in
            field.map { Negotiation.ifNoneMatch($0, matches: representation.etag) }
        }
        if let notModified {
            return .prepared(notModified ? representation.notModified : representation.ok)
        }
        if let since = request.header("If-Modified-Since"), let seconds = UTCDateTime.parseHTTPDate(since),
            entry.lastModifiedSeconds <= seconds
        {
            return .prepared(representation.notModified)
        }
        return .prepared(representation.ok)
    }

    // MARK: Credentials

    /// The name behind a valid `Authorization: Bearer` token. Every configured token is compared in full,
    /// in constant time, whatever matches.
    func authenticate(_ request: HTTPRequest) -> String? {
        guard let field = request.header("Authorization"), field.count > 7, field.prefix(7).lowercased() == "bearer " else {
            return nil
        }
        let presented = Array(field.utf8.dropFirst(7))
        var found: String?
        for (name, token) in tokens where constantTimeEqual(presented, token) && found == nil {
            found = name
        }
        return found
    }

    func unauthorized() -> HTTPReply {
        .response(
            Problem(
                status: 401, slug: "unauthorized", title: "Unauthorized",
                detail: "the management plane needs Authorization: Bearer <admin token>",
                headers: [HTTPHeader("WWW-Authenticate", "Bearer realm=\"tabserver\"")]
            ).response)
    }
}

/// Equal length and bytes, in time that depends only on the lengths.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
    let count = max(a.count, b.count)
    for i in 0..<count {
        let x = i < a.count ? a[i] : 0
        let y = i < b.count ? b[i] : 0
        difference |= x ^ y
    }
    return difference == 0
}

/// A JSON answer with the canonical encoding.
func json(_ status: Int, _ object: [String: JSONValue], headers: [HTTPHeader] = []) -> HTTPResponse {
    HTTPResponse(
        status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers, body: CanonicalJSON.encode(.object(object)))
}

func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

#if canImport(Glibc)
    import Glibc
#endif
