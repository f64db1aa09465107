// swift-tools-version:6.0
import PackageDescription

/// The Swift client library for apps (docs/client.md): Foundation only (FoundationNetworking on Linux), nothing of the
/// server. Pinned signing keys are checked with CryptoKit on Apple platforms; Linux has no CryptoKit, so there (and
/// only there) swift-crypto's `Crypto`, the same API, verifies Ed25519. The product dependency is conditional
/// (`.when(platforms: [.linux])`): an iOS or macOS app builds and links CryptoKit and no package code, neither
/// swift-crypto nor the swift-asn1 it brings. SwiftPM still resolves both (they appear in an app's Package.resolved):
/// a package-level dependency cannot be conditional, only what a target builds.
/// An app takes it by path (`package: "TabClient"`, the directory's name) or, from a repository of its own, by URL (`package:` is then the URL's last path component).
///
/// No unsafe flags (a package with them cannot be a versioned dependency): CI builds it with
/// `-Xswiftc -warnings-as-errors` instead (Makefile, `test-client`).
let package = Package(
    name: "TabClient",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "TabClient", targets: ["TabClient"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0")
    ],
    targets: [
        .target(
            name: "TabClient",
            dependencies: [.product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: [.linux]))]),
        .testTarget(name: "TabClientTests", dependencies: ["TabClient"], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)
