// swift-tools-version:6.2
// Micro-benchmarks of the compiler and the encoders (package-benchmark), a package of their own so that the
// service's build never carries the benchmark dependency.
//   swift package --package-path Benchmarks benchmark
import PackageDescription

let package = Package(
    name: "TabServerBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "tabserver", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "LayoutBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "TabLayout", package: "tabserver"),
            ],
            path: "Benchmarks/LayoutBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "HeaderBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HeaderFields", package: "tabserver"),
            ],
            path: "Benchmarks/HeaderBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The readers' worst cases within the 1 MiB limit, and the 10k/20k/40k-key dictionaries.
        .executableTarget(
            name: "ReaderBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "TabLayout", package: "tabserver"),
            ],
            path: "Benchmarks/ReaderBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
