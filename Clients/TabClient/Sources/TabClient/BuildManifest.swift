import Foundation

/// What an app build has (docs/builds.md): the view controllers and images a layout may name. An app's test
/// makes it from the app's own classes and writes it as JSON, the body of `PUT /v1/builds/{platform}/{appVersion}`
/// that CI sends before the build ships (docs/client.md, "Declaring a build"), so that the server refuses a layout
/// this build could not open.
///
/// ```swift
/// let manifest = BuildManifest(platform: "iphone", appVersion: "4.2.0",
///                              viewControllers: ["HomeViewController", "SearchViewController"], images: ["house"])
/// try manifest.write(to: URL(fileURLWithPath: "build/tabs-build.json"))
/// ```
public struct BuildManifest: Sendable, Hashable, Codable {
    /// One of the layout format's platforms (docs/layout-format.md): `iphone`, `ipad`, `mac`, `tv`, `vision`, `android`.
    public var platform: String
    /// As the app sends it in `X-App-Version`.
    public var appVersion: String
    /// Every class a layout's `rootViewController` may name (children's too).
    public var viewControllers: [String]
    /// The image names a layout may use; nil declares none (the server then checks no images).
    public var images: [String]?
    public var note: String?

    public init(platform: String, appVersion: String, viewControllers: [String], images: [String]? = nil, note: String? = nil) {
        self.platform = platform
        self.appVersion = appVersion
        self.viewControllers = viewControllers
        self.images = images
        self.note = note
    }

    /// `/v1/builds/{platform}/{appVersion}`, the path the body goes to.
    public var path: String { "/v1/builds/\(platform)/\(appVersion)" }

    /// The body of the `PUT`: `{"viewControllers": [...], "images"?: [...], "note"?: ...}`, names sorted and
    /// unique, keys sorted (the same build gives the same bytes).
    public func body() -> Data {
        struct Body: Encodable {
            var viewControllers: [String]
            var images: [String]?
            var note: String?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = Body(viewControllers: Array(Set(viewControllers)).sorted(), images: images.map { Array(Set($0)).sorted() }, note: note)
        // Encoding strings and arrays of strings cannot fail.
        return (try? encoder.encode(body)) ?? Data("{}".utf8)
    }

    /// Writes ``body()`` to `url` (atomically).
    public func write(to url: URL) throws {
        try body().write(to: url, options: .atomic)
    }
}
