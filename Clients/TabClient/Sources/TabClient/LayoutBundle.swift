import Foundation

/// The `…/tabs/bundle` document (docs/client.md, "Add the package and ship today's layout") an app ships so that its first launch needs no network and its first
/// request is a `304`: one compiled layout per locale (and platform and app version), each with its ETags.
///
/// It holds the stable version of its environment when it was made, the same for every install: a rollout's
/// candidate reaches an app only from the network (`X-Install-Id` on ``TabClient``'s requests), never from here.
public struct LayoutBundle: Sendable, Hashable, Codable {
    public var account: String
    /// When the server made it (RFC 3339).
    public var generatedAt: String?
    public var representations: [Representation]

    /// One compiled variant of the layout and the ETags the server gives it.
    public struct Representation: Sendable, Hashable, Codable {
        public var locale: String
        public var platform: String?
        public var appVersion: String?
        public var contentType: String?
        /// The ETag of the uncompressed representation.
        public var etag: String
        /// The ETag of each content coding (`identity`, `gzip`, `br`): a client whose stack asks for a coding
        /// revalidates against that coding's tag.
        public var etags: [String: String]?
        public var layout: CompiledLayout
        /// The exact bytes of ``layout`` as the server signed them, with the signature (a server with
        /// `--signing-key`); a client with pinned keys shows the layout these bytes hold, and only when they verify.
        public var signed: SignedBody?

        /// Every ETag of this representation, for `If-None-Match`.
        public var validators: [String] {
            var result = [etag]
            for (_, tag) in (etags ?? [:]).sorted(by: { $0.key < $1.key }) where !result.contains(tag) { result.append(tag) }
            return result
        }

        public init(
            locale: String, platform: String? = nil, appVersion: String? = nil, contentType: String? = "application/json",
            etag: String, etags: [String: String]? = nil, layout: CompiledLayout, signed: SignedBody? = nil
        ) {
            self.locale = locale
            self.platform = platform
            self.appVersion = appVersion
            self.contentType = contentType
            self.etag = etag
            self.etags = etags
            self.layout = layout
            self.signed = signed
        }
    }

    public init(account: String, generatedAt: String? = nil, representations: [Representation]) {
        self.account = account
        self.generatedAt = generatedAt
        self.representations = representations
    }

    /// Decodes a bundle and validates every layout in it.
    /// - Throws: ``TabClientError/invalidBundle(_:)`` when it is not a bundle, has no representation, or one of
    ///   its layouts is invalid.
    public static func decode(_ data: Data) throws(TabClientError) -> LayoutBundle {
        let bundle: LayoutBundle
        do {
            bundle = try JSONLimits.decode(LayoutBundle.self, from: data)
        } catch {
            throw .invalidBundle(CompiledLayout.describe(error))
        }
        guard !bundle.representations.isEmpty else { throw .invalidBundle("it has no representations") }
        for (index, representation) in bundle.representations.enumerated() {
            do {
                try representation.layout.validate()
            } catch {
                throw .invalidBundle("/representations/\(index)/layout: \(error)")
            }
        }
        return bundle
    }

    /// Reads and validates a bundle file (`Bundle.main.url(forResource: "Tabs.bundle", withExtension: "json")`).
    /// - Throws: ``TabClientError/invalidBundle(_:)``, also when the file cannot be read.
    public static func load(contentsOf url: URL) throws(TabClientError) -> LayoutBundle {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw .invalidBundle("cannot read \(url.path): \(error.localizedDescription)")
        }
        return try decode(data)
    }

    /// The representation for a client: the platform and app version it says (or ones made for any), then the
    /// first of its preferred languages the bundle has (exactly, then by language: `fr-CA` → `fr`), else the
    /// first representation; nil only for a bundle without representations.
    public func representation(preferredLanguages: [String], platform: String?, appVersion: String?) -> Representation? {
        let targeted = representations.filter {
            ($0.platform == nil || $0.platform == platform) && ($0.appVersion == nil || $0.appVersion == appVersion)
        }
        let exactTarget = targeted.filter { $0.platform == platform && $0.appVersion == appVersion }
        let candidates = exactTarget.isEmpty ? (targeted.isEmpty ? representations : targeted) : exactTarget
        for language in preferredLanguages {
            if let match = candidates.first(where: { $0.locale.caseInsensitiveCompare(language) == .orderedSame }) { return match }
            let base = Self.language(of: language)
            if let match = candidates.first(where: { Self.language(of: $0.locale) == base }) { return match }
        }
        return candidates.first
    }

    static func language(of locale: String) -> String {
        String(locale.prefix { $0 != "-" && $0 != "_" }).lowercased()
    }
}
