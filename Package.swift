// swift-tools-version:6.2
import PackageDescription

/// Our own targets: Swift 6 language mode, and every warning is an error.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "tabserver",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .executable(name: "tabserver", targets: ["tabserver"]),
        // The watcher built on the Swift client library (Clients/TabClient, a package of its own for apps).
        .executable(name: "tabs-watch", targets: ["tabs-watch"]),
        // For the fuzz targets in Fuzz/ (a package of their own).
        .library(name: "TabLayout", targets: ["TabLayout"]),
        // For the header-decision benchmark in Benchmarks/ (a package of its own).
        .library(name: "HeaderFields", targets: ["HeaderFields"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // TreeDictionary: the snapshot's per-account maps, shared between versions (a write copies O(log n)).
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // Ed25519 signatures of layouts and manifests (Curve25519 over BoringSSL: no cryptography of our own), and the
        // DER of PKCS#8 keys.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        // The client library apps take (iOS 16 / macOS 13, Foundation only): tabs-watch and the live tests use it.
        .package(path: "Clients/TabClient"),
    ],
    targets: [
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        // The process's epoll_wait: ends libmicrohttpd's wait after a full batch of events (see its source file).
        .target(name: "CEpollBatch"),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(name: "CBrotli", pkgConfig: "libbrotlienc", providers: [.apt(["libbrotli-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Webhook deliveries: libcurl from Debian, through one C function (variadic setopt is not callable from Swift).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Publish-time compression (brotli, gzip) and allocation-free request header decisions.
        .target(name: "Compression", dependencies: ["CBrotli", "CZlib"], swiftSettings: strict),
        .target(name: "HeaderFields", dependencies: ["TabTime"], swiftSettings: strict),
        // Times: the calendar once, RFC 3339 read (two explicit readings) and written, IMF-fixdate written.
        .target(name: "TabTime", swiftSettings: strict),
        // JSON: the one value (with null), its canonical writer, its string escaping and its parse, the one encoder
        // configuration, and the one field error (a JSON Pointer and a message) of bodies and sources.
        .target(name: "TabJSON", swiftSettings: strict),
        .testTarget(name: "TabJSONTests", dependencies: ["TabJSON"], swiftSettings: strict),
        // RFC 9457 problem documents, written once for every layer that answers one (MicroHTTPD's refusals, the
        // service, the start-up probes), and the catalogue of their kinds.
        .target(name: "ProblemDocument", dependencies: ["TabJSON"], swiftSettings: strict),
        .testTarget(name: "ProblemDocumentTests", dependencies: ["ProblemDocument"], swiftSettings: strict),
        .target(
            name: "MicroHTTPD",
            dependencies: ["CMicroHTTPD", "CEpollBatch", "ProblemDocument", "TabTime", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // SHA-256 and strong entity tags: all the stores need of the layout code.
        .target(name: "ContentHash", swiftSettings: strict),
        .target(name: "TabLayout", dependencies: ["ContentHash", "TabTime", "TabJSON"], swiftSettings: strict),
        // Tokens, scopes and account globs, "may this token do this", audit entries: pure, the clock passed in.
        .target(name: "TabAccess", dependencies: ["ContentHash", "TabTime", "TabJSON"], swiftSettings: strict),
        // Standard Webhooks signing, the retry schedule, the address policy, event payloads.
        .target(name: "TabWebhooks", dependencies: ["TabAccess", "ContentHash", "TabJSON"], swiftSettings: strict),
        .target(
            name: "TabStore", dependencies: ["ContentHash", "CSQLite", "TabWebhooks", "TabAccess", "TabDelivery", "TabGuard", "TabTime"],
            swiftSettings: strict),
        // Ed25519 signing keys (PKCS#8 PEM) and the signatures of layouts and manifests (docs/signing.md).
        .target(
            name: "TabSigning",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "SwiftASN1", package: "swift-asn1")],
            swiftSettings: strict),
        .testTarget(name: "TabSigningTests", dependencies: ["TabSigning"], swiftSettings: strict),
        // App builds and the screens they declare; the gate that keeps a layout from a build that cannot open it, and
        // the trim of what a declared build is sent (docs/builds.md).
        .target(name: "TabBuilds", dependencies: ["TabLayout"], swiftSettings: strict),
        .testTarget(name: "TabBuildsTests", dependencies: ["TabBuilds", "TabLayout"], swiftSettings: strict),
        // Change requests: what a protected environment's change waits for, and its approvals (docs/change-requests.md).
        .target(name: "TabReview", dependencies: ["TabJSON"], swiftSettings: strict),
        .testTarget(name: "TabReviewTests", dependencies: ["TabReview"], swiftSettings: strict),
        // A compiled layout drawn as its tab bar, in SVG 1.1.
        .target(name: "TabPreview", dependencies: ["TabLayout"], swiftSettings: strict),
        // The lint of a layout that compiles: warnings (android-more, contrast, …) that writes and validate carry.
        .target(name: "TabLint", dependencies: ["TabLayout"], swiftSettings: strict),
        .testTarget(name: "TabLintTests", dependencies: ["TabLint", "TabLayout"], swiftSettings: strict),
        .target(
            name: "TabStorePostgres", dependencies: ["TabStore", "CLibPQ", "TabDelivery", "TabAccess", "TabTime"], swiftSettings: strict),
        // Environments, drafts, rollouts and the install bucket: pure decisions, the clock passed in.
        .target(name: "TabDelivery", dependencies: ["TabTime", "TabJSON", "TabGuard"], swiftSettings: strict),
        // The guard of a rollout: the apps' reports per arm and a rule in, a verdict out (docs/rollouts.md).
        .target(name: "TabGuard", swiftSettings: strict),
        .testTarget(name: "TabGuardTests", dependencies: ["TabGuard"], swiftSettings: strict),
        // A configs directory (layouts/, strings/) read, imported into a store, or compiled offline.
        .target(name: "TabConfigs", dependencies: ["TabLayout", "TabStore", "TabDelivery"], swiftSettings: strict),
        // The operators' web console: the files of its Resources/, carried inside the binary as Swift source that
        // the ConsoleEmbedder build-tool plugin generates at build time (with console-embed, its tool).
        .target(
            name: "TabConsole", dependencies: ["ContentHash"], exclude: ["Resources"], swiftSettings: strict,
            plugins: ["ConsoleEmbedder"]),
        .plugin(name: "ConsoleEmbedder", capability: .buildTool(), dependencies: ["console-embed"]),
        .executableTarget(name: "console-embed", path: "Plugins/ConsoleEmbedTool", swiftSettings: strict),
        .target(
            name: "TabService",
            dependencies: [
                "MicroHTTPD", "ProblemDocument", "TabLayout", "TabStore", "TabConfigs", "TabConsole", "TabPreview", "Compression",
                "HeaderFields", "TabDelivery", "TabGuard", "TabAccess", "TabWebhooks", "TabSigning", "TabBuilds", "TabReview", "TabTime",
                "TabJSON", "TabLint", "CCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HashTreeCollections", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        // What the process reads from its surroundings: container limits, the environment and admin tokens, the
        // store's location, the health probe. The executable only boots over it.
        .target(
            name: "TabRuntime",
            dependencies: ["TabStore", "TabStorePostgres", "TabTime", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        .executableTarget(
            name: "tabserver",
            dependencies: [
                "TabService", "TabRuntime", "MicroHTTPD", "ProblemDocument", "TabConfigs", "TabLayout", "TabStore", "TabStorePostgres",
                "TabWebhooks", "TabDelivery", "TabSigning", "TabReview", "TabTime", "TabLint",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TabLayoutTests",
            dependencies: ["TabLayout", "TabTime"],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(name: "TabPreviewTests", dependencies: ["TabPreview", "TabLayout"], swiftSettings: strict),
        .testTarget(name: "CompressionTests", dependencies: ["Compression"], swiftSettings: strict),
        .testTarget(name: "TabDeliveryTests", dependencies: ["TabDelivery", "TabGuard"], swiftSettings: strict),
        .testTarget(name: "HeaderFieldsTests", dependencies: ["HeaderFields"], swiftSettings: strict),
        .testTarget(name: "TabAccessTests", dependencies: ["TabAccess"], swiftSettings: strict),
        .testTarget(name: "TabWebhooksTests", dependencies: ["TabWebhooks", "TabAccess"], swiftSettings: strict),
        // The HTTP layer over real sockets, with a small handler of its own (no TabService).
        // The tests' one socket client (RawConnection) and the HTTP/1.1 client over it.
        .target(name: "TabTestSupport", path: "Tests/TabTestSupport", swiftSettings: strict),
        .testTarget(name: "MicroHTTPDTests", dependencies: ["MicroHTTPD", "TabTestSupport"], swiftSettings: strict),
        // MicroHTTPD's pieces that open no socket and keep no deadline (the PROXY header parsed, the paced resumer,
        // shared responses): in process.
        .testTarget(name: "MicroHTTPDUnitTests", dependencies: ["MicroHTTPD", "TabTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "TabStoreTests",
            dependencies: ["TabStore", "TabStorePostgres", "TabLayout", "TabWebhooks", "TabDelivery", "TabGuard", "TabTime", "TabJSON"],
            swiftSettings: strict),
        .executableTarget(
            name: "tabs-watch",
            dependencies: [
                .product(name: "TabClient", package: "TabClient"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "TabServerTests", dependencies: ["tabserver", "TabTestSupport"], swiftSettings: strict),
        // The executable's flags, file checks and `validate` command, which open no socket: in process.
        .testTarget(name: "TabServerUnitTests", dependencies: ["tabserver", "TabTestSupport"], swiftSettings: strict),
        .testTarget(name: "TabRuntimeTests", dependencies: ["TabRuntime"], swiftSettings: strict),
        // Admin tokens, container limits and the log handler, which open no socket: in process.
        .testTarget(name: "TabRuntimeUnitTests", dependencies: ["TabRuntime"], swiftSettings: strict),
        // The client against the real tabserver and tabs-watch (its own tests run in Clients/TabClient).
        .testTarget(
            name: "TabClientLiveTests",
            dependencies: [.product(name: "TabClient", package: "TabClient")],
            swiftSettings: strict
        ),
        // The harnesses both TabService test targets use: the route collections over a memory store, run in process
        // (CollectionHarness, WriteHarness), a live service on a socket (ServiceHarness), and test bodies that run both
        // ways through a ServiceClient (in process or over a socket).
        .target(
            name: "TabServiceTestSupport",
            dependencies: [
                "TabService", "TabConfigs", "MicroHTTPD", "TabStore", "TabTestSupport", "TabAccess", "TabWebhooks", "TabDelivery",
                "TabSigning", "TabReview", "TabTime", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TabServiceTestSupport",
            swiftSettings: strict
        ),
        // The service over sockets and PostgreSQL: run one suite at a time (scripts/swift-tests).
        .testTarget(
            name: "TabServiceTests",
            dependencies: [
                "TabService", "TabConfigs", "MicroHTTPD", "TabStore", "TabStorePostgres", "TabLayout", "TabTestSupport", "TabAccess",
                "TabWebhooks", "TabDelivery", "TabSigning", "TabReview", "TabServiceTestSupport",
            ],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        // The service's routes, snapshot, tokens and decisions, which open no socket and use no PostgreSQL: in process.
        .testTarget(
            name: "TabServiceUnitTests",
            dependencies: [
                "TabService", "TabConfigs", "MicroHTTPD", "TabStore", "TabLayout", "TabTestSupport", "TabAccess", "TabWebhooks",
                "TabDelivery", "TabSigning", "TabReview", "TabTime", "TabServiceTestSupport",
            ],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
