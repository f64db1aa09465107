import Foundation

/// Where a ``TabClient`` asks, who it says it is, where it keeps the last good layout, and how long it waits.
public struct TabClientConfiguration: Sendable {
    /// The server, e.g. `https://tabs.example.com` (paths below `/v1/accounts/…` are added).
    public var server: URL
    /// The account whose layout this client shows (`[A-Za-z0-9._-]{1,128}`).
    public var account: String
    /// Sent as `Accept-Language`, best first (default: the user's preferred languages).
    public var preferredLanguages: [String]
    /// Sent as `X-Client-Platform`: `iphone`, `ipad`, `mac`, `tv`, `vision`, `android`; nil sends none (and the
    /// server gives every tab). The default is the system's (``defaultPlatform``): on iOS `iphone` or `ipad` from the
    /// device's model, `mac`, `tv` or `vision` on those systems; nil on Linux (no such platform: the server would
    /// refuse another name).
    public var platform: String?
    /// Sent as `X-App-Version` (default: the main bundle's `CFBundleShortVersionString`, if any).
    public var appVersion: String?
    /// The environment whose layout this client shows, sent as `Tabs-Environment` (`[a-z][a-z0-9_-]{0,31}`, e.g.
    /// `staging` for testers' builds); nil sends none and gets the server's default environment (the last of its
    /// `--environments`, `production` unless configured otherwise).
    public var environment: String?
    /// The id this install sends as `X-Install-Id` (the server buckets installs into a rollout by it), for an app
    /// that already has an install id of its own: at most 128 characters, no control characters, no space at
    /// either end. Nil (the default): a random id is made once and kept in ``cacheDirectory`` (a new one at every
    /// launch when that is nil too). Never pass the vendor id or anything else that identifies the device or user.
    public var installID: String?
    /// Where the last good layout and the install id are kept; nil keeps them in memory only.
    public var cacheDirectory: URL?
    /// The longest a request may take, apart from the time a long-poll is held.
    public var requestTimeout: Duration
    /// How long the server may hold a long-poll (`?wait=N`): keep it under the idle timeout of every proxy on
    /// the way (60 s is common). The server lowers it to its `--max-wait`.
    public var longPollWait: Duration
    /// The first delay after a failure; it doubles with each failure in a row, up to ``maximumBackoff``, and a
    /// random part of up to half of it is taken off (jitter).
    public var initialBackoff: Duration
    public var maximumBackoff: Duration
    /// Manifest mode (docs/client.md, "Manifest mode"): ask `…/tabs/manifest`, the same answer for every install,
    /// choose this install's arm of a rollout on the device (``Bucket``), and fetch that version by number
    /// (`…/tabs?version=N`, immutable): shared caches and CDNs can serve both. No install id is sent. Default false:
    /// `…/tabs`, where the server chooses the arm from `X-Install-Id`.
    public var manifestMode: Bool
    /// The public keys whose signature a layout or manifest must carry (``SigningKeys``); nil (the default) checks
    /// no signature. With keys, anything unsigned or not verifying is refused, from the network, cache or bundle.
    public var signingKeys: SigningKeys?
    /// The device's clock, against which manifest mode times a rollout's coming steps (``TabClient/nextSwitch``); the
    /// system's by default. Tests give one they move.
    public var clock: any DeviceClock
    /// The launch guard (``TabClient/markRendered()``): after this many launches in a row that end before the app calls
    /// `markRendered()` for a layout newly shown, the client goes back to the last layout that rendered and blocks that
    /// version. Default 2; 0 turns the guard off (blocked and revoked versions are still refused).
    public var launchAttempts: Int = 2
    /// The launch guard in one run: a layout newly shown and not rendered within this time (by ``clock``) is undone the
    /// same way. Default 10 s; zero turns it off.
    public var readyTimeout: Duration = .seconds(10)
    /// Whether the client queues reports (``TabClient/markRendered()``, ``TabClient/reportTabFailed(_:reason:)``, reverts and
    /// refusals) and sends them to `…/tabs/reports`. Default true; tests turn it off unless they test it.
    public var reports: Bool = true
    /// Told about every request's outcome (for logs and tests); called on the client's own tasks.
    public var onEvent: (@Sendable (TabClientEvent) -> Void)?

    public init(
        server: URL, account: String, preferredLanguages: [String] = Locale.preferredLanguages,
        platform: String? = TabClientConfiguration.defaultPlatform, appVersion: String? = TabClientConfiguration.mainBundleVersion,
        environment: String? = nil, installID: String? = nil, cacheDirectory: URL? = TabClientConfiguration.defaultCacheDirectory,
        requestTimeout: Duration = .seconds(15),
        longPollWait: Duration = .seconds(50), initialBackoff: Duration = .seconds(1), maximumBackoff: Duration = .seconds(60),
        manifestMode: Bool = false, signingKeys: SigningKeys? = nil, clock: any DeviceClock = SystemDeviceClock(),
        onEvent: (@Sendable (TabClientEvent) -> Void)? = nil
    ) {
        self.server = server
        self.account = account
        self.preferredLanguages = preferredLanguages
        self.platform = platform
        self.appVersion = appVersion
        self.environment = environment
        self.installID = installID
        self.cacheDirectory = cacheDirectory
        self.requestTimeout = requestTimeout
        self.longPollWait = longPollWait
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.manifestMode = manifestMode
        self.signingKeys = signingKeys
        self.clock = clock
        self.onEvent = onEvent
    }

    /// The system's platform: `iphone` or `ipad` on iOS (from the device's model identifier, so without UIKit and off
    /// the main actor), `mac`, `tv` or `vision` on those systems; nil elsewhere (Linux is none of the server's platforms).
    public static var defaultPlatform: String? {
        #if os(macOS) || targetEnvironment(macCatalyst)
            return "mac"
        #elseif os(tvOS)
            return "tv"
        #elseif os(visionOS)
            return "vision"
        #elseif os(iOS)
            return platform(forModel: deviceModel())
        #else
            return nil
        #endif
    }

    /// `iphone` for an iPhone's or iPod touch's model identifier (`iPhone15,2`, `iPod9,1`), `ipad` for an iPad's
    /// (`iPad13,1`), else nil (an iPad app on a Mac reports the Mac's model: nil, every tab).
    static func platform(forModel model: String?) -> String? {
        guard let model else { return nil }
        if model.hasPrefix("iPhone") || model.hasPrefix("iPod") { return "iphone" }
        if model.hasPrefix("iPad") { return "ipad" }
        return nil
    }

    #if os(iOS)
        /// The device's model identifier: `hw.machine` (`iPhone15,2`), or in the Simulator the simulated device's.
        static func deviceModel() -> String? {
            if let simulated = ProcessInfo.processInfo.environment["SIMULATOR_MODEL_IDENTIFIER"] { return simulated }
            var size = 0
            guard sysctlbyname("hw.machine", nil, &size, nil, 0) == 0, size > 0 else { return nil }
            var bytes = [CChar](repeating: 0, count: size)
            guard sysctlbyname("hw.machine", &bytes, &size, nil, 0) == 0 else { return nil }
            return bytes.withUnsafeBufferPointer { buffer in buffer.baseAddress.map { String(cString: $0) } }
        }
    #endif

    /// The app's `CFBundleShortVersionString`, when the process has one.
    public static var mainBundleVersion: String? {
        Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String
    }

    /// `Caches/TabClient` of the user's domain (the system may empty it; the bundle then serves).
    public static var defaultCacheDirectory: URL? {
        FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first?.appendingPathComponent("TabClient")
    }

    /// `Accept-Language` for ``preferredLanguages``: `fr-FR, fr;q=0.9, en;q=0.8` (q falls by 0.1, down to 0.1).
    public var acceptLanguage: String? {
        guard !preferredLanguages.isEmpty else { return nil }
        return preferredLanguages.prefix(10).enumerated().map { index, language in
            index == 0 ? language : "\(language);q=0.\(max(1, 10 - index))"
        }.joined(separator: ", ")
    }

    /// Checks ``environment`` and ``installID`` (what ``TabClient/init(configuration:bundle:)`` checks).
    /// - Throws: ``TabClientError/invalidEnvironment(_:reason:)`` or ``TabClientError/invalidInstallID(_:)``.
    func validateIdentity() throws(TabClientError) {
        if let environment, let problem = Self.environmentProblem(environment) { throw .invalidEnvironment(environment, reason: problem) }
        if let installID, let problem = InstallID.problem(with: installID) { throw .invalidInstallID(problem) }
    }

    /// What is wrong with `name` as an environment name (`[a-z][a-z0-9_-]{0,31}`, as the server's
    /// `--environments` names them), or nil.
    static func environmentProblem(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        guard let first = bytes.first else { return "an environment name is empty" }
        guard (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
            return "an environment name starts with a lowercase letter a-z"
        }
        let allowed = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard bytes.allSatisfy(allowed) else {
            return "an environment name has only lowercase letters a-z, digits, '-' and '_'"
        }
        if bytes.count > 32 { return "an environment name has at most 32 characters; this one has \(bytes.count)" }
        return nil
    }

    /// The environment named in the bytes a signature covers: ``environment``, else `production` (the server's
    /// default `--environments`). A client of a server whose last environment has another name sets ``environment``.
    public var signatureEnvironment: String { environment ?? "production" }

    /// `…/v1/accounts/{account}/tabs`, with `?wait=N` for a long-poll.
    func tabsURL(wait: Duration? = nil) -> URL {
        url("/tabs", wait.map { [URLQueryItem(name: "wait", value: "\($0.components.seconds)")] })
    }

    /// `…/v1/accounts/{account}/tabs?version=N&environment=E`: one version, immutable (manifest mode). `E` is the manifest's
    /// environment: its signature names it, so the URL does too and no shared cache hands one environment's copy to another.
    func tabsURL(version: Int, environment: String) -> URL {
        url("/tabs", [URLQueryItem(name: "version", value: "\(version)"), URLQueryItem(name: "environment", value: environment)])
    }

    /// `…/v1/accounts/{account}/tabs/manifest`, with `?wait=N` for a long-poll.
    func manifestURL(wait: Duration? = nil) -> URL {
        url("/tabs/manifest", wait.map { [URLQueryItem(name: "wait", value: "\($0.components.seconds)")] })
    }

    private func url(_ tail: String, _ query: [URLQueryItem]?) -> URL {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        let base = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = base + "/v1/accounts/\(account)" + tail
        components.queryItems = query
        return components.url ?? server
    }

    /// `…/v1/accounts/{account}/tabs/bundle` for the preferred languages, platform and app version.
    func bundleURL() -> URL {
        var items = preferredLanguages.map { URLQueryItem(name: "locale", value: $0) }
        if let platform { items.append(URLQueryItem(name: "platform", value: platform)) }
        if let appVersion { items.append(URLQueryItem(name: "appVersion", value: appVersion)) }
        return url("/tabs/bundle", items.isEmpty ? nil : items)
    }
}
