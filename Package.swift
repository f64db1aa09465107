// swift-tools-version:6.2
import PackageDescription

/// Our own targets: Swift 6 language mode, and every warning is an error.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "tabserver",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tabserver", targets: ["tabserver"]),
        // For the fuzz targets in Fuzz/ (a package of their own).
        .library(name: "TabLayout", targets: ["TabLayout"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // TreeDictionary: the snapshot's per-account maps, shared between versions (a write copies O(log n)).
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
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
        .target(
            name: "MicroHTTPD",
            dependencies: ["CMicroHTTPD", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(name: "TabLayout", swiftSettings: strict),
        .target(name: "TabStore", dependencies: ["TabLayout", "CSQLite"], swiftSettings: strict),
        .target(name: "TabStorePostgres", dependencies: ["TabStore", "CLibPQ"], swiftSettings: strict),
        .target(
            name: "TabService",
            dependencies: [
                "MicroHTTPD", "TabLayout", "TabStore", .product(name: "Logging", package: "swift-log"),
                .product(name: "HashTreeCollections", package: "swift-collections"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "tabserver",
            dependencies: [
                "TabService", "TabLayout", "TabStore", "TabStorePostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TabLayoutTests",
            dependencies: ["TabLayout"],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(name: "TabStoreTests", dependencies: ["TabStore", "TabStorePostgres", "TabLayout"], swiftSettings: strict),
        .testTarget(
            name: "TabServiceTests",
            dependencies: ["TabService", "MicroHTTPD", "TabStore", "TabStorePostgres", "TabLayout"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
