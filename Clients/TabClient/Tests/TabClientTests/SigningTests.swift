import Foundation
import Testing

@testable import TabClient

/// Pinned keys, buckets and manifests against the shared fixtures (`Clients/conformance/signed`, made by openssl's
/// and Python's Ed25519): the key ids and signatures there are checked with the platform's verifier.
@Suite struct SigningTests {
    static func fixtures() -> [String: Any] {
        let url = ConformanceTests.directory.appendingPathComponent("signed/fixtures.json")
        let data = (try? Data(contentsOf: url)) ?? Data()
        return ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
    }

    static func key(_ name: String) -> String { (fixtures()["keys"] as? [String: String])?[name] ?? "" }

    static func fixture(_ name: String) throws -> (body: Data, signature: String) {
        let entry = try #require((fixtures()["fixtures"] as? [String: Any])?[name] as? [String: String])
        return (Data(try #require(entry["body"]).utf8), try #require(entry["signature"]))
    }

    @Test func keyIDsAreTheFirstEightBytesOfTheSHA256OfTheRawKey() throws {
        let ids = try #require(Self.fixtures()["keyIds"] as? [String: String])
        for name in ["current", "next", "stranger"] {
            #expect(SigningKeys.keyID(try #require(Data(base64Encoded: Self.key(name)))) == ids[name])
        }
        #expect(try SigningKeys(base64: [Self.key("current"), Self.key("next")]).keyIDs == [ids["current"]!, ids["next"]!].sorted())
    }

    @Test func aGoodSignatureVerifiesAndAChangedByteDoesNot() throws {
        let keys = try SigningKeys(base64: [Self.key("current")])
        let (body, header) = try Self.fixture("layout-v2")
        let signature = Signature(header: header)
        try keys.verify(signature, kind: .layout, account: "jack", environment: "production", body: body)
        var flipped = body
        flipped[flipped.count / 2] ^= 0x01
        #expect(throws: TabClientError.self) {
            try keys.verify(signature, kind: .layout, account: "jack", environment: "production", body: flipped)
        }
        // The kind, account and environment are signed too.
        #expect(throws: TabClientError.self) {
            try keys.verify(signature, kind: .manifest, account: "jack", environment: "production", body: body)
        }
        #expect(throws: TabClientError.self) {
            try keys.verify(signature, kind: .layout, account: "jill", environment: "production", body: body)
        }
        #expect(throws: TabClientError.self) {
            try keys.verify(signature, kind: .layout, account: "jack", environment: "staging", body: body)
        }
        #expect(throws: TabClientError.self) { try keys.verify(nil, kind: .layout, account: "jack", environment: "production", body: body) }
    }

    @Test func aKeyThatIsNotOneIsRefusedWhenPinned() {
        #expect(throws: TabClientError.self) { try SigningKeys(base64: []) }
        #expect(throws: TabClientError.self) { try SigningKeys(base64: ["not base64!"]) }
        #expect(throws: TabClientError.self) { try SigningKeys(base64: [Data(count: 31).base64EncodedString()]) }
        let wrongID = #"{"keys":[{"kid":"0000000000000000","alg":"Ed25519","publicKey":"\#(Self.key("current"))"}]}"#
        #expect(throws: TabClientError.self) { try SigningKeys(keysDocument: Data(wrongID.utf8)) }
        let wrongAlgorithm = #"{"keys":[{"kid":"e0c6403a229eab24","alg":"RS256","publicKey":"\#(Self.key("current"))"}]}"#
        #expect(throws: TabClientError.self) { try SigningKeys(keysDocument: Data(wrongAlgorithm.utf8)) }
    }

    @Test func theSignatureHeaderIsParsedAsTheServerWritesIt() {
        #expect(Signature(header: #"keyid="abc", sig="ZGF0YQ==""#) == Signature(keyID: "abc", value: "ZGF0YQ=="))
        #expect(Signature(header: #"sig="ZGF0YQ==",  keyid="abc""#) == Signature(keyID: "abc", value: "ZGF0YQ=="))
        #expect(Signature(header: "keyid=abc, sig=ZGF0YQ==") == nil)
        #expect(Signature(header: #"keyid="abc""#) == nil)
    }

    @Test func bucketsMatchThePublishedVectors() throws {
        let url = ConformanceTests.directory.appendingPathComponent("bucket-vectors.json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let vectors = try #require(document["vectors"] as? [[String: Any]])
        #expect(vectors.count >= 5)
        for vector in vectors {
            let seed = try #require(vector["seed"] as? String)
            let install = try #require(vector["installId"] as? String)
            #expect(Bucket.of(installID: install, seed: seed) == vector["bucket"] as? Int, "\(seed) \(install)")
        }
    }

    @Test func aManifestGivesTheArmByBucketAndTesters() throws {
        let manifest = try Manifest.decode(try Self.fixture("manifest-r5").body)
        #expect(manifest.revision == 1_795_000_000_005)  // tabserver's revisions are milliseconds: beyond 32 bits
        #expect(manifest.version(for: "3f1c9e2a-7d4b-4c1e-9a55-0b6d2e8f1a77") == 2)  // bucket 1095 < 5000
        #expect(manifest.version(for: "install-0") == 1)  // bucket 9785
        #expect(manifest.version(for: "tester-0") == 2)  // a tester, bucket 7237
        #expect(try Manifest.decode(try Self.fixture("manifest-r6").body).version(for: "tester-0") == 1)
        // The share in basis points, as the server compares it: 0.07 × 100 is 7.000000000000001, and bucket 7 is not below 7.
        #expect(Bucket.of(installID: "install-13381", seed: "fixed-seed") == 7)
        for (share, version) in [("0.07", 1), ("0.08", 2)] {
            let body =
                #"{"account":"jack","environment":"production","layout":"jack","revision":1,"rollout":{"id":1,"installs":[],"percent":"#
                + share + #","schedule":[],"seed":"fixed-seed","version":2},"stable":{"version":1}}"#
            #expect(try Manifest.decode(Data(body.utf8)).version(for: "install-13381") == version, "\(share)")
        }
        #expect(throws: TabClientError.self) { try Manifest.decode(Data("{}".utf8)) }
    }

    @Test func aBuildManifestIsThePUTBody() throws {
        let build = BuildManifest(
            platform: "iphone", appVersion: "4.2.0", viewControllers: ["SearchViewController", "HomeViewController", "HomeViewController"],
            images: ["house"])
        #expect(build.path == "/v1/builds/iphone/4.2.0")
        #expect(
            String(decoding: build.body(), as: UTF8.self)
                == #"{"images":["house"],"viewControllers":["HomeViewController","SearchViewController"]}"#)
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("build.json")
        try build.write(to: file)
        #expect(try Data(contentsOf: file) == build.body())
    }
}
