import Foundation
import Testing

@testable import TabLayout

/// Every input the fuzzers ever kept (`Fixtures/fuzz-regressions`, written by `scripts/fuzz`) and every hostile
/// fixture goes through every reader and the whole compile: each must end in a value or a `LayoutError`, never
/// a crash or a hang (a crash fails the test process).
@Suite struct FuzzRegressionTests {
    static let folders = ["fuzz-regressions", "sources", "patch-seeds"]
    static var inputs: [String] {
        folders.flatMap { folder in ((try? Fixtures.names(folder)) ?? []).map { "\(folder)/\($0)" } }
    }

    /// A renamed or emptied folder would otherwise leave the parameterised test below with nothing to run, and pass.
    @Test(arguments: folders)
    func everyFixtureFolderHoldsInputs(folder: String) throws {
        #expect(try Fixtures.names(folder).count > 0, "Fixtures/\(folder) holds no inputs")
    }

    @Test(arguments: inputs)
    func everyReaderEndsInAValueOrAnError(path: String) throws {
        let bytes = try Fixtures.bytes(path)
        _ = try? JSONReader.read(bytes)
        _ = try? XMLPlistReader.read(bytes)
        _ = try? BinaryPlistReader.read(BinaryPlistReader.isBinaryPlist(bytes) ? bytes : Array("bplist00".utf8) + bytes)
        _ = try? StringsTable.read(bytes)
        if let document = try? LayoutSource.parse(bytes),
            let resolved = try? LayoutResolver.resolve(name: "fuzz", version: 1, document: document, lookup: { _ in nil })
        {
            let compiled = LayoutCompiler.compile(resolved, for: ClientContext(locale: "en", platform: .iphone), globalStrings: [:])
            #expect(!CanonicalJSON.encode(compiled.document).isEmpty)
        }
        let split = bytes.firstIndex(of: 0) ?? bytes.count
        if let document = try? JSONReader.read(Array(bytes[..<split])), split < bytes.count,
            let patch = try? JSONReader.read(Array(bytes[(split + 1)...]))
        {
            _ = try? JSONPatch.apply(patch, to: document)
            _ = JSONPatch.mergePatch(document, patch)
        }
    }
}
