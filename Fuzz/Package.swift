// swift-tools-version:6.2
// libFuzzer targets for the readers (a package of its own: they only link with -sanitize=fuzzer).
//   make fuzz FUZZ_SECONDS=60
import PackageDescription

let targets = ["FuzzJSON", "FuzzXMLPlist", "FuzzBinaryPlist", "FuzzStrings", "FuzzPatch", "FuzzCompile"]

let package = Package(
    name: "TabServerFuzz",
    products: targets.map { .executable(name: $0, targets: [$0]) },
    dependencies: [.package(name: "tabserver", path: "..")],
    targets: targets.map {
        .executableTarget(name: $0, dependencies: ["FuzzSupport", .product(name: "TabLayout", package: "tabserver")])
    } + [
        .target(name: "CFuzzDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzDriver"]),
    ],
    swiftLanguageModes: [.v6]
)
