import Foundation
import TabTestSupport
import Testing

/// `tabserver validate FILE` prints the lint's warnings and still exits 0; a file that does not compile exits 1.
@Suite struct ValidateCommandTests {
    func validate(_ source: String) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("validate-\(UUID().uuidString).json")
        try Data(source.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = try builtExecutable("tabserver")
        process.arguments = ["validate", file.path]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TABSERVER_") }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test func warningsArePrintedAndTheFileStillPasses() throws {
        let tabs = (0..<7).map { #"{"id":"t\#($0)","title":"T\#($0)","rootViewController":"T\#($0)"}"# }.joined(separator: ",")
        let (status, output) = try validate(#"{"schemaVersion":1,"tabs":[\#(tabs)]}"#)
        #expect(status == 0, "\(output)")
        #expect(output.contains(": warning: /tabs: android-more: "), "\(output)")
        #expect(output.contains(": warning: /tabs: iphone-overflow: "), "\(output)")
    }

    @Test func aQuietLayoutPrintsNothingAndABrokenOneFails() throws {
        let quiet = try validate(#"{"schemaVersion":1,"tabs":[{"id":"a","title":"A","rootViewController":"A"}]}"#)
        #expect(quiet.status == 0 && quiet.output.isEmpty, "\(quiet.output)")
        let broken = try validate(#"{"schemaVersion":1,"tabs":[{"id":"a","title":"A","rootViewController":"A","role":"bar"}]}"#)
        #expect(broken.status == 1 && broken.output.contains("/tabs/0/role"), "\(broken.output)")
    }
}
