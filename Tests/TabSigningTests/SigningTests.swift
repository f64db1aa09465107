import Foundation
import Testing

@testable import TabSigning

/// Runs `openssl` with `arguments`; its standard output, or nil when it failed.
@discardableResult
private func openssl(_ arguments: [String]) throws -> Data? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = Pipe()
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 ? data : nil
}

private func scratch() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tabsigning-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Keys as OpenSSL writes them, signatures as OpenSSL verifies them (RFC 8032 Ed25519, RFC 8410 PKCS#8).
@Suite struct SigningTests {
    @Test func aKeyOpenSSLMadeSignsWhatOpenSSLVerifiesAndAByteFlippedFails() throws {
        let directory = try scratch()
        let key = directory.appendingPathComponent("k.pem").path
        let pub = directory.appendingPathComponent("pub.pem").path
        try #require(try openssl(["genpkey", "-algorithm", "ed25519", "-out", key]) != nil)
        try #require(try openssl(["pkey", "-in", key, "-pubout", "-out", pub]) != nil)
        let signer = try #require(Signer(keys: [try SigningKey.load(path: key)]))
        let body = Array(#"{"layout":"jack","tabs":[]}"#.utf8)
        let (keyID, signature) = signer.sign(kind: .layout, account: "jack", environment: "production", body: body)
        let message = Signer.message(kind: .layout, account: "jack", environment: "production", body: body)
        #expect(message == Array("tabs-signature-v1\nlayout\njack\nproduction\n".utf8) + body)
        let messagePath = directory.appendingPathComponent("msg").path
        let signaturePath = directory.appendingPathComponent("sig").path
        try (Data(base64Encoded: signature) ?? Data()).write(to: URL(fileURLWithPath: signaturePath))
        func verifies(_ bytes: [UInt8]) throws -> Bool {
            try Data(bytes).write(to: URL(fileURLWithPath: messagePath))
            return try openssl(["pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", messagePath, "-sigfile", signaturePath])
                != nil
        }
        #expect(try verifies(message))
        var flipped = message
        flipped[flipped.count - 3] ^= 0x01
        #expect(try !verifies(flipped))
        #expect(try !verifies(Signer.message(kind: .manifest, account: "jack", environment: "production", body: body)))
        // The key id: the first 8 bytes of SHA-256 of the raw public key (the DER's last 32 bytes).
        let der = try #require(try openssl(["pkey", "-pubin", "-in", pub, "-outform", "DER"]))
        let raw = Array(der.suffix(32))
        #expect(raw == signer.keys[0].publicKey)
        #expect(keyID.count == 16 && keyID == SigningKey.keyID(publicKey: raw))
        let header = signer.header(kind: .layout, account: "jack", environment: "production", body: body)
        #expect(header == "keyid=\"\(keyID)\", sig=\"\(signature)\"")
    }

    @Test func aGeneratedKeyIsPKCS8ThatOpenSSLReads() throws {
        let directory = try scratch()
        let key = SigningKey.generate()
        let path = directory.appendingPathComponent("gen.pem").path
        try Data(key.pem.utf8).write(to: URL(fileURLWithPath: path))
        let text = try #require(try openssl(["pkey", "-in", path, "-text", "-noout"]))
        #expect(String(decoding: text, as: UTF8.self).contains("ED25519 Private-Key"))
        #expect(try SigningKey.load(path: path).keyID == key.keyID)
    }

    @Test func keysThatAreNotEd25519AreRefusedNamingTheFile() throws {
        let directory = try scratch()
        let ec = directory.appendingPathComponent("ec.pem").path
        try #require(try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", ec]) != nil)
        #expect(throws: SigningKeyError.self) { try SigningKey.load(path: ec) }
        do {
            _ = try SigningKey.load(path: ec)
        } catch {
            #expect(error.description.contains(ec) && error.description.contains("not Ed25519"), "\(error)")
        }
        let ed = directory.appendingPathComponent("ed.pem").path
        try #require(try openssl(["genpkey", "-algorithm", "ed25519", "-out", ed]) != nil)
        let pub = directory.appendingPathComponent("pub.pem").path
        try #require(try openssl(["pkey", "-in", ed, "-pubout", "-out", pub]) != nil)
        #expect(throws: SigningKeyError.notPKCS8(file: pub, found: "PUBLIC KEY")) { try SigningKey.load(path: pub) }
        #expect(throws: SigningKeyError.unreadable(file: directory.path + "/missing.pem")) {
            try SigningKey.load(path: directory.path + "/missing.pem")
        }
        #expect(throws: SigningKeyError.notPEM(file: "x.pem")) { try SigningKey(pem: "not a key", file: "x.pem") }
    }

    @Test func aKeyFileAGroupOrOthersMayReadIsNamedWithItsMode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try SigningKey.generate().pem.write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(SigningKey.exposure(path: path) == nil)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        let warning = try #require(SigningKey.exposure(path: path))
        #expect(warning.contains(path) && warning.contains("644"), "\(warning)")
        #expect(try SigningKey.load(path: path).publicKey.count == 32, "the key is still used")
    }

    @Test func theKeysDocumentListsEveryKeyTheFirstSigns() throws {
        let (first, second) = (SigningKey.generate(), SigningKey.generate())
        let signer = try #require(Signer(keys: [first, second]))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(signer.keysDocument)) as? [String: [[String: String]]])
        #expect(document["keys"]?.map { $0["kid"] } == [first.keyID, second.keyID])
        #expect(document["keys"]?.first?["alg"] == "Ed25519")
        #expect(document["keys"]?.first?["publicKey"] == Data(first.publicKey).base64EncodedString())
        #expect(signer.sign(kind: .manifest, account: "a", environment: "e", body: []).keyID == first.keyID)
        #expect(Signer(keys: []) == nil)
    }
}
