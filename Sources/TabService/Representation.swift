import Compression
import Dispatch
import HashTreeCollections
import HeaderFields
import Logging
import MicroHTTPD
import Synchronization
import TabLayout
import TabPreview
import TabSigning
import TabStore
import TabTime

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
    /// The tab bar drawn as SVG in the dark scheme (`…/tabs/preview.svg?scheme=dark`).
    case previewDark

    var contentType: String {
        switch self {
        case .json: "application/json"
        case .plist, .legacyPlist: "application/x-plist"
        case .preview, .previewDark: "image/svg+xml"
        }
    }
}

/// Which variant of a layout a request selects. Every member is a small index, so the set of keys of a
/// layout is finite: locales × 7 platform choices × (2 × app-version bounds + 2) × 5 formats.
struct VariantKey: Hashable, Sendable {
    var locale: UInt16
    var platform: UInt8
    var versionClass: UInt16
    var format: RepresentationFormat
    /// The declared build's slot (``BuildRegistry/Declared``), 0 for a client of no declared build.
    var build: UInt64 = 0
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
        // No copy of the body: the 304 only announces the 200's length (RFC 9110 §8.6), as it did when it was built
        // over a copy of the same bytes.
        notModified = try PreparedResponse(status: 304, headers: shared, announcingLength: body.count)
    }

    /// The shared 200 or 304 with its header fields rewritten (`key` names the rewrite: one key, one result), over
    /// the same body without a copy: a version's immutable answer, a signed one. Made on the first request and kept
    /// with the form (at most ``derivedKept``; beyond, nil and the caller builds one per request), so that those
    /// answers cost what the plain one does.
    func derived(_ key: String, notModified: Bool, _ rewrite: ([HTTPHeader]) -> [HTTPHeader]) -> PreparedResponse? {
        let base = notModified ? self.notModified : ok
        let slot = notModified ? "304\n" + key : "200\n" + key
        if let known = derivedResponses.withLock({ $0[slot] }) { return known }
        guard let made = try? PreparedResponse(status: base.status, headers: rewrite(base.headers), sharingBodyOf: base) else { return nil }
        return derivedResponses.withLock { kept in
            if let raced = kept[slot] { return raced }
            guard kept.count < Self.derivedKept else { return made }
            kept[slot] = made
            return made
        }
    }

    private let derivedResponses = Mutex<[String: PreparedResponse]>([:])
    static let derivedKept = 32
}

/// One representation, built once: its codings (identity always; brotli and gzip when smaller), each with its
/// strong ETag and shared responses, and its `Last-Modified`.
final class Representation: Sendable {
    let forms: [CodedForm]
    /// The codings besides identity that it keeps.
    let available: AvailableCodings
    /// Its codings by size, smallest first: the one sent when the client weighs several equally.
    let preference: CodingPreference
    /// Unix seconds of the newest input of this representation (its layout, bases, and strings tables of its locale).
    let lastModifiedSeconds: Int64
    /// Whether a different content of this representation may carry the same `Last-Modified` second (two changes
    /// within one second): then `If-Modified-Since` for that second is answered 200, never a wrong 304.
    let lastModifiedIsAmbiguous: Bool
    /// The memory it holds, for the cache's bound: each form's body once (the 200's buffer; the 304 has none) and
    /// ~2 KiB of headers, response objects, cache slot and allocator overhead per form.
    let cost: Int
    /// Set by each request that uses it, cleared by each sweep of the cache: a representation found clear was
    /// not asked for since the previous sweep (the second-chance rule).
    private let recentlyUsed = Atomic<Bool>(true)

    /// Builds this representation with its brotli form too (set while that form is still being made).
    let completer: (@Sendable () -> Representation?)?

    init(
        body: [UInt8], contentType: String, locale: String?, vary: String, lastModifiedSeconds: Int64, ambiguous: Bool,
        cacheControl: String, codings: [ContentCoding: [UInt8]] = [:], extraHeaders: [HTTPHeader] = [],
        sharedExtraHeaders: [HTTPHeader] = [], completer: (@Sendable () -> Representation?)? = nil
    ) throws(MicroHTTPDError) {
        self.completer = completer
        let etag = EntityTag.strong(for: body)
        self.lastModifiedSeconds = lastModifiedSeconds
        self.lastModifiedIsAmbiguous = ambiguous
        // What a 304 repeats (RFC 9110 §15.4.5): validators and caching fields, not representation metadata
        // such as Content-Language; and `sharedExtraHeaders` (`Tabs-Revoked`), so that a client revalidating its
        // layout hears of revocations too.
        var shared = [
            HTTPHeader("Cache-Control", cacheControl), HTTPHeader("Vary", vary),
            HTTPHeader("Last-Modified", Timestamp(unixSeconds: lastModifiedSeconds).httpDate),
        ]
        shared += sharedExtraHeaders
        var okHeaders = [HTTPHeader("Content-Type", contentType)]
        if ContentPolicy.applies(to: contentType) { okHeaders += ContentPolicy.headers }
        if let locale { okHeaders.append(HTTPHeader("Content-Language", locale)) }
        okHeaders += extraHeaders
        withholds = extraHeaders.contains { $0.name == "Tabs-Withheld" }
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
        self.preference = CodingPreference(
            identity: forms[0].bodyCount, gzip: forms.first { $0.coding == .gzip }?.bodyCount,
            br: forms.first { $0.coding == .br }?.bodyCount)
        self.cost = forms.reduce(0) { $0 + $1.bodyCount + 2048 }
    }

    /// The identity form (every representation has one).
    var identity: CodedForm { forms[0] }

    /// Whether it holds tabs back from a declared build (`Tabs-Withheld`).
    let withholds: Bool

    /// `Tabs-Signature` of this representation's identity body by account and environment, made on the first 200
    /// for each (one in the common case; the accounts served `default` share its representations). At most
    /// ``signaturesKept`` are kept; beyond, a signature is made for each answer.
    private let signatures = Mutex<[String: HTTPHeader]>([:])
    static let signaturesKept = 256

    /// The `Tabs-Signature` of a 200 of this representation for `account` in `environment`: every coding has the
    /// identity body's.
    func signature(account: String, environment: String, signer: Signer) -> HTTPHeader {
        let key = account + "\n" + environment
        if let known = signatures.withLock({ $0[key] }) { return known }
        let header = HTTPHeader(
            "Tabs-Signature", signer.header(kind: .layout, account: account, environment: environment, body: identity.ok.body))
        signatures.withLock { if $0.count < Self.signaturesKept { $0[key] = header } }
        return header
    }

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
    /// Of codings the client weighs equally, the smallest form.
    func form(acceptEncoding field: UnsafeBufferPointer<UInt8>?) -> CodedForm? {
        guard let field else { return forms[0] }
        return AcceptEncoding.choose(CollectionOfOne(field), available: available, preference: preference).flatMap(form)
    }

    /// Notes a request for it: a read of the bit, and a write only the first time after a sweep.
    func markUsed() {
        if !recentlyUsed.load(ordering: .relaxed) { recentlyUsed.store(true, ordering: .relaxed) }
    }

    /// Whether a request used it since the last call (and clears that).
    func takeUsed() -> Bool { recentlyUsed.exchange(false, ordering: .relaxed) }
}

/// Why a representation could not be built.
enum RepresentationError: Error, CustomStringConvertible {
    case response(MicroHTTPDError)
    case preview(TabPreviewError)
    /// A declared build can open none of the layout's tabs.
    case nothingToOpen

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
        case .nothingToOpen: "the build declares none of the layout's view controllers"
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
