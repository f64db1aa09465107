import Foundation
import HeaderFields
import MicroHTTPD
import TabDelivery
import TabLayout
import TabPreview

extension ClientPlaneRoutes {
    /// `GET …/tabs/bundle?locale=L&locale=M&platform=P&appVersion=V`: what an app ships so that its first launch
    /// needs no network and its first request is a 304 — per locale, the compiled layout and the tags `…/tabs`
    /// gives for it (identity and each coding).
    /// - Throws: 400 for a bad or an over-long list of locales, 404 for an environment or a layout there is none of.
    func serveBundle(_ request: borrowing HTTPRequest, _ inputs: ClientInputs) throws(Problem) -> HTTPReply {
        let (account, platform, appVersion) = (inputs.account, inputs.platform, inputs.appVersion?.version)
        let environment = try self.environment(inputs)
        // Repeated, so read here rather than as one declared value.
        let asked = request.queryValues("locale")
        guard asked.count <= Self.bundleLocaleLimit else {
            throw Problem.badRequest("a bundle is asked for at most \(Self.bundleLocaleLimit) locale parameters, not \(asked.count)")
        }
        for locale in asked where !isValidLocale(locale) {
            throw Problem.badRequest("'\(locale.prefix(64))' is not a locale tag such as en or fr-CA")
        }
        let snapshot = self.snapshot(for: environment)
        guard let entry = snapshot.entry(for: account) else { throw Problem.noLayout(account) }
        // One representation per locale of the layout that the asked tags choose, in the order first asked: `fr`,
        // `fr-FR` and `fr` again are one entry (a repeated parameter cannot multiply the answer).
        var chosen: [Int] = []
        for index in asked.isEmpty ? Array(entry.locales.indices) : asked.map(entry.localeIndex(asked:)) where !chosen.contains(index) {
            chosen.append(index)
        }
        let appVersionText = inputs.appVersion?.query
        // Compiling and compressing each variant (brotli too, so that the bundle lists every coding's tag) is done
        // off libmicrohttpd's threads.
        let (locales, targetPlatform, targetVersion) = (chosen, platform, appVersion)
        return .deferred {
            self.bundle(
                account: account, entry: entry, snapshot: snapshot, locales: locales, platform: targetPlatform, appVersion: targetVersion,
                appVersionText: appVersionText, environment: environment)
        }
    }

    /// Most `locale=` parameters a bundle request may carry (400 beyond).
    static let bundleLocaleLimit = 64
    /// Most bytes a bundle answer may hold (400 beyond: ask for fewer locales).
    static let bundleByteLimit = 8 << 20

    private func bundle(
        account: String, entry: LayoutEntry, snapshot: Snapshot, locales: [Int], platform: Platform?, appVersion: AppVersion?,
        appVersionText: String?, environment: EnvironmentName
    ) -> HTTPResponse {
        var representations: [[UInt8]] = []
        var size = 0
        for index in locales {
            let locale = entry.locales[index]
            let wanted = VariantRequest(
                account: account, format: .json, localeQuery: locale, acceptLanguage: nil, platform: platform, appVersion: appVersion,
                acceptEncoding: "br", environment: environment)  // every coding made now, so that the bundle lists each one's tag
            guard let (representation, _) = try? select(wanted, in: snapshot) else { return Problem.internalError.response }
            var etags: [String: JSONValue] = [:]
            for coded in representation.forms { etags[coded.coding.token ?? "identity"] = .string(coded.etag) }
            var members: [String: JSONValue] = [
                "locale": .string(locale), "contentType": .string("application/json"), "etag": .string(representation.identity.etag),
                "etags": .object(etags),
            ]
            if let signer = signer {
                // The exact bytes signed, so that a shipped copy is checked as an answer from the network is.
                let body = representation.identity.ok.body
                let (keyID, signature) = signer.sign(kind: .layout, account: account, environment: environment.text, body: body)
                members["signed"] = .object(
                    ["body": .string(Data(body).base64EncodedString()), "keyid": .string(keyID), "sig": .string(signature)])
            }
            var object = CanonicalJSON.encode(.object(members))
            object.removeLast()
            object += Array(",\"platform\":".utf8) + (platform.map { CanonicalJSON.encode(.string($0.rawValue)) } ?? Array("null".utf8))
            object += Array(",\"appVersion\":".utf8) + (appVersionText.map { CanonicalJSON.encode(.string($0)) } ?? Array("null".utf8))
            object += Array(",\"layout\":".utf8) + representation.identity.ok.body + [UInt8(ascii: "}")]
            size += object.count + 1
            guard size <= Self.bundleByteLimit else {
                return Problem.badRequest(
                    "the bundle of \(locales.count) locales would exceed \(Self.bundleByteLimit >> 20) MiB; ask for fewer with locale="
                )
                .response
            }
            representations.append(object)
        }
        var body = Array("{\"account\":".utf8) + CanonicalJSON.encode(.string(account))
        body += Array(",\"generatedAt\":".utf8) + CanonicalJSON.encode(.string(clock.now.rfc3339))
        body += Array(",\"representations\":[".utf8) + Array(representations.joined(separator: [UInt8(ascii: ",")])) + Array("]}".utf8)
        return HTTPResponse(
            status: 200, headers: [HTTPHeader("Content-Type", "application/json"), HTTPHeader("Cache-Control", "no-store")], body: body)
    }

    /// `GET …/tabs/preview.svg`: the tab bar drawn, a representation like the others (shared, with its tag);
    /// `?scheme=dark` draws it in dark mode (a representation of its own); `?selected=<tab id>` draws another tab
    /// selected (drawn for the request).
    /// - Throws: what `…/tabs` answers (400, 404, 406, …).
    func servePreview(_ request: borrowing HTTPRequest, _ inputs: ClientInputs, scheme: ColourScheme, selected: String?) throws(Problem)
        -> HTTPReply
    {
        guard let selected else { return try serveTabs(request, inputs, format: scheme == .dark ? .previewDark : .preview) }
        let environment = try self.environment(inputs)
        guard let entry = snapshot(for: environment).entry(for: inputs.account) else { throw Problem.noLayout(inputs.account) }
        // The same choices as every client-plane answer: locale, platform and app version.
        let locale = entry.locales[chosenLocale(request, inputs, entry)]
        let (account, platform, appVersion) = (inputs.account, inputs.platform, inputs.appVersion?.version)
        let cacheControl = self.cacheControl
        // Drawn for the request (not cached), so on the variant builder's turn, off libmicrohttpd's threads.
        return .deferred {
            let drawn = await self.builder.build(layout: account) { () -> HTTPResponse in
                let compiled = LayoutCompiler.compile(
                    entry.resolved, for: ClientContext(locale: locale, platform: platform, appVersion: appVersion),
                    globalStrings: entry.globalStrings)
                do {
                    let svg = try TabPreview.svg(compiled, selected: selected, scheme: scheme, platform: platform)
                    return HTTPResponse(
                        status: 200,
                        headers: [
                            HTTPHeader("Content-Type", "image/svg+xml"), HTTPHeader("ETag", EntityTag.strong(for: svg)),
                            HTTPHeader("Cache-Control", cacheControl), HTTPHeader("Vary", entry.vary),
                        ], body: svg)
                } catch {
                    return Problem.badRequest("\(error)").response
                }
            }
            return drawn
                ?? Problem(
                    .busy, detail: "this layout has \(self.builder.perLayout) drawings being made; retry shortly",
                    headers: [HTTPHeader("Retry-After", "1")]
                ).response
        }
    }
}
