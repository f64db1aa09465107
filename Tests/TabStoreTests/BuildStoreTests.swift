import Foundation
import Testing

@testable import TabStore

/// The builds part of the store contract, on every backend this machine has.
@Suite struct BuildStoreTests {
    static func build(_ version: String, _ spec: String, at millis: Int64 = 1_000) -> StoredBuild {
        StoredBuild(
            platform: "iphone", appVersion: version, spec: Array(spec.utf8), declaredAtMillis: millis, declaredBy: "ci", lastSeenMillis: nil
        )
    }

    @Test(arguments: Backend.available)
    func aDeclarationReadsBackIsReplacedKeepingItsSightingsAndIsRetiredOnce(backend: Backend) async throws {
        let store = try backend.open()
        #expect(try await store.declare(build: Self.build("2.0", #"{"viewControllers":["A"]}"#), audit: nil) == false)
        #expect(try await store.declare(build: Self.build("2.1", #"{"viewControllers":["A","B"]}"#), audit: nil) == false)
        #expect(try await store.builds().map(\.appVersion) == ["2.0", "2.1"])
        try await store.markBuildsSeen([(platform: "iphone", appVersion: "2.0", atMillis: 120_000)])
        try await store.markBuildsSeen([(platform: "iphone", appVersion: "2.0", atMillis: 60_000)])  // never back
        try await store.markBuildsSeen([(platform: "android", appVersion: "9.0", atMillis: 60_000)])  // not declared: nothing
        #expect(try await store.builds().first?.lastSeenMillis == 120_000)
        #expect(try await store.declare(build: Self.build("2.0", #"{"viewControllers":["A","C"]}"#, at: 2_000), audit: nil) == true)
        let replaced = try #require(try await store.builds().first)
        #expect(replaced.spec == Array(#"{"viewControllers":["A","C"]}"#.utf8) && replaced.declaredAtMillis == 2_000)
        #expect(replaced.lastSeenMillis == 120_000)
        #expect(try await store.retireBuild(platform: "iphone", appVersion: "2.0", audit: nil) == true)
        #expect(try await store.retireBuild(platform: "iphone", appVersion: "2.0", audit: nil) == false)
        #expect(try await store.builds().map(\.appVersion) == ["2.1"])
    }
}
