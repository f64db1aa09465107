import Foundation
import TabServiceTestSupport
import Testing

/// Every answer that is not JSON carries `Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline';
/// sandbox` and `nosniff`, over a real socket; an SVG whose titles try every injection still parses as SVG (xmllint)
/// with those titles as text, and with no script and no event handler.
@Suite struct ContentPolicyTests {
    static let policy = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
    static let injections = [
        "<script>alert(1)</script>",
        "\"><svg onload=alert(2)>",
        "]]><script>alert(3)</script><![CDATA[",
        "&amp; &lt;b&gt; &#x3C;script&#x3E; &#60;",
        "'><img src=x onerror=alert(4)>",
        "</title><script xlink:href=\"data:,alert(5)\"/>",
    ]

    /// A layout whose tab titles are `titles`, as JSON (each title escaped as a JSON string).
    static func layout(_ titles: [String]) throws -> [UInt8] {
        let tabs = titles.enumerated().map { index, title in
            ["id": "t\(index)", "title": title, "rootViewController": "T\(index)ViewController"]
        }
        return Array(try JSONSerialization.data(withJSONObject: ["schemaVersion": 1, "tabs": tabs], options: [.sortedKeys]))
    }

    @Test func anSVGWithHostileTitlesParsesWithTheTitlesAsTextAndCarriesThePolicy() async throws {
        let harness = try await ServiceHarness()
        defer { harness.server.stop() }
        let client = harness.client()
        let put = try await client.send(
            "PUT", "/v1/accounts/hostile/layout", headers: ServiceHarness.admin([("Content-Type", "application/json")]),
            body: try Self.layout(Self.injections))
        #expect(put.status == 201 || put.status == 200, "\(put.status) \(put.text)")
        let svg = try await client.send("GET", "/v1/accounts/hostile/tabs/preview.svg")
        #expect(svg.status == 200)
        #expect(svg.header("Content-Type") == "image/svg+xml")
        #expect(svg.header("Content-Security-Policy") == Self.policy)
        #expect(svg.header("X-Content-Type-Options") == "nosniff")

        guard let xmllint = findExecutable("xmllint") else {
            Issue.record("xmllint is missing (Debian's libxml2-utils; `make test-deps` installs it)")
            return
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString).svg")
        try Data(svg.body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        func xpath(_ expression: String) throws -> String {
            // xmllint ends what it prints with a line feed of its own.
            let output = try runProgram(xmllint, ["--nonet", "--xpath", expression, file.path]).output
            return output.hasSuffix("\n") ? String(output.dropLast()) : output
        }
        #expect(try runProgram(xmllint, ["--noout", "--nonet", file.path]).status == 0, "the SVG is well-formed XML")
        #expect(try xpath("name(/*)") == "svg")
        #expect(try xpath("namespace-uri(/*)") == "http://www.w3.org/2000/svg")
        #expect(try xpath("count(//*[local-name()='script'])") == "0")
        #expect(try xpath("count(//@*[starts-with(local-name(), 'on')])") == "0")
        #expect(try xpath("count(//*[local-name()='img' or local-name()='foreignObject'])") == "0")
        let count = Int(try xpath("count(//*[local-name()='title'])")) ?? 0
        var titles: [String] = []
        for index in 1...max(count, 1) {
            titles.append(try xpath("string((//*[local-name()='title'])[\(index)])"))
        }
        for injection in Self.injections {
            // The selected tab's title says so after its own.
            #expect(titles.contains(injection) || titles.contains(injection + ", selected"), "\(injection) is a title's text: \(titles)")
        }
    }

    /// The other non-JSON answers: the XML property list forms, the OpenAPI YAML, the metrics text; JSON answers
    /// (the layout, a problem) do not need it. The console keeps a policy of its own.
    @Test func everyNonJSONAnswerCarriesThePolicy() async throws {
        let harness = try await ServiceHarness()
        defer { harness.server.stop() }
        let client = harness.client()
        for (path, headers) in [
            ("/v1/accounts/jack/tabs", [("Accept", "application/x-plist")]),
            ("/v1/accounts/jack/ApplicationHierarchy.plist", []),
            ("/v1/accounts/jack/tabs/preview.svg", [("Accept-Encoding", "gzip, br")]),
            ("/openapi.yaml", []),
            ("/metrics", ServiceHarness.admin()),
        ] {
            let answer = try await client.send("GET", path, headers: headers)
            #expect(answer.status == 200, "\(path): \(answer.status)")
            #expect(answer.header("Content-Security-Policy") == Self.policy, "\(path)")
            #expect(answer.header("X-Content-Type-Options") == "nosniff", "\(path)")
        }
        let json = try await client.send("GET", "/v1/accounts/jack/tabs")
        #expect(json.header("Content-Type") == "application/json")
        #expect(json.header("Content-Security-Policy") == nil)
        let console = try await client.send("GET", "/console/")
        #expect(console.header("Content-Security-Policy")?.hasPrefix("default-src 'self'") == true)
    }
}

/// The first executable named `name` on `PATH`.
func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Runs a program to its end; its standard output and error together, and its exit status.
func runProgram(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
