// swift-tools-version:6.0
import PackageDescription

/// The Swift client library for apps (docs/client.md): Foundation only (FoundationNetworking on Linux), no
/// dependencies, nothing of the server. An app takes it by path (`package: "TabClient"`, the directory's name) or,
/// from a repository of its own, by URL (`package:` is then the URL's last path component).
///
/// No unsafe flags (a package with them cannot be a versioned dependency): CI builds it with
/// `-Xswiftc -warnings-as-errors` instead (Makefile, `test-client`).
let package = Package(
    name: "TabClient",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "TabClient", targets: ["TabClient"])
    ],
    targets: [
        .target(name: "TabClient"),
        .testTarget(name: "TabClientTests", dependencies: ["TabClient"], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)
