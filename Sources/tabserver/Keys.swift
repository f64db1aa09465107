import ArgumentParser
import Foundation
import TabRuntime
import TabSigning

/// `--signing-key FILE` (repeatable) or `TABSERVER_SIGNING_KEYS` (comma-separated): the keys that sign layouts and
/// manifests (docs/rollouts.md, "Signed layouts"). Read before anything else starts, so that a bad key stops `serve` at once.
struct SigningOptions: ParsableArguments {
    @Option(
        name: .customLong("signing-key"),
        help:
            "Sign every 200 of …/tabs and …/tabs/manifest with this Ed25519 key (PKCS#8 PEM); repeat to publish the next key before it signs: the first signs, all are in /v1/keys (env TABSERVER_SIGNING_KEYS, comma-separated)."
    )
    var signingKeys: [String] = []

    /// The signer of the keys named, nil when none is; `warn` is told of each key file a group or others may read
    /// (it is still used).
    /// - Throws: a ``ValidationError`` naming the file that is missing, unreadable, not PEM, not PKCS#8 or not Ed25519.
    func signer(_ environment: Environment, warn: (String) -> Void) throws -> Signer? {
        let paths =
            signingKeys.isEmpty
            ? (environment["TABSERVER_SIGNING_KEYS"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
            : signingKeys
        var keys: [SigningKey] = []
        for path in paths {
            do throws(SigningKeyError) {
                keys.append(try SigningKey.load(path: path))
            } catch {
                throw ValidationError(error.description)
            }
            if let exposure = SigningKey.exposure(path: path) { warn(exposure) }
        }
        return Signer(keys: keys)
    }
}

/// `tabserver keys generate --out FILE`: a new Ed25519 signing key (what `openssl genpkey -algorithm ed25519` makes).
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Signing keys for --signing-key.", subcommands: [Generate.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new Ed25519 private key (PKCS#8 PEM, mode 0600) and print its key id and public key.")

        @Option(help: "The file to write (refused when it exists).") var out: String

        func run() throws {
            guard !FileManager.default.fileExists(atPath: out) else { throw ValidationError("\(out) exists: not overwritten") }
            let key = SigningKey.generate()
            guard FileManager.default.createFile(atPath: out, contents: Data(key.pem.utf8), attributes: [.posixPermissions: 0o600])
            else { throw ValidationError("cannot write \(out)") }
            print("wrote \(out): keyid \(key.keyID), public key \(Data(key.publicKey).base64EncodedString())")
        }
    }
}
