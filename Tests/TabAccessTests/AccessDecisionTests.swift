import Foundation
import TabAccess
import Testing

@Suite struct AccessDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A token made from `json` at `now`, its secret, and a lookup that finds only it.
    func issue(_ json: String, environments: [String] = ["staging", "production"]) throws -> (AccessToken, IssuedSecret) {
        let spec = try TokenSpec(json: Array(json.utf8), environments: environments, now: Self.now)
        return AccessToken.issue(spec, createdBy: "root", at: Self.now)
    }

    func authenticate(_ authorization: String?, _ token: AccessToken?, at: Date = now, bootstrap: BootstrapTokens = BootstrapTokens([]))
        -> Result<Grant, AccessRefusal>
    {
        Authentication.authenticate(BearerCredential(authorization: authorization), bootstrap: bootstrap, at: at) { id in
            token?.id == id ? token : nil
        }
    }

    @Test func aFreshTokenAuthenticatesToItsGrant() throws {
        let (token, secret) = try issue(#"{"name": "ios-ci", "scopes": ["write"], "accounts": ["shop-*"], "environments": ["staging"]}"#)
        let grant = try authenticate("Bearer " + secret.token, token).get()
        #expect(grant.name == "ios-ci")
        #expect(grant.tokenID == token.id)
        #expect(grant.scopes == [.write])
        #expect(grant.environments == ["staging"])
        #expect(token.createdBy == "root")
    }

    @Test func aRequestWithoutCredentialsGetsABareChallenge() {
        let refusal = AccessRefusal.missingToken
        #expect(authenticate(nil, nil) == .failure(refusal))
        #expect(authenticate("Basic YWRtaW46YWRtaW4=", nil) == .failure(refusal))
        #expect(refusal.status == 401)
        #expect(refusal.wwwAuthenticate == #"Bearer realm="tabserver""#)
    }

    @Test func anUnknownIdAndAWrongSecretLookTheSameToTheClient() throws {
        let (token, secret) = try issue(#"{"name": "a", "scopes": ["read"]}"#)
        let other = IssuedSecret(for: token.id)  // Right id, a secret the store never saw.
        let unknown = IssuedSecret(for: TokenID.generate())
        let wrong = authenticate("Bearer " + other.token, token)
        let missing = authenticate("Bearer " + unknown.token, token)
        #expect(wrong == .failure(.invalidToken(.wrongSecret)))
        #expect(missing == .failure(.invalidToken(.unknown)))
        for case .failure(let refusal) in [wrong, missing] {
            #expect(refusal.status == 401)
            #expect(
                refusal.wwwAuthenticate == #"Bearer realm="tabserver", error="invalid_token", error_description="the token is not valid""#)
        }
        #expect(authenticate("Bearer " + secret.token, token).isSuccess)
        #expect(authenticate("Bearer tsk_nope", token) == .failure(.invalidToken(.malformed)))
    }

    @Test func expiryHoldsFromTheInstantItNames() throws {
        let (token, secret) = try issue(#"{"name": "a", "scopes": ["read"], "expiresAt": "2027-02-01T08:00:00Z"}"#)
        let expiry = try #require(RFC3339.date(from: "2027-02-01T08:00:00Z"))
        #expect(authenticate("Bearer " + secret.token, token, at: expiry.addingTimeInterval(-1)).isSuccess)
        #expect(authenticate("Bearer " + secret.token, token, at: expiry) == .failure(.invalidToken(.expired)))
        #expect(AccessRefusal.invalidToken(.expired).wwwAuthenticate.contains(#"error="invalid_token""#))
    }

    @Test func aRevokedTokenIsInvalidFromItsRevocation() throws {
        var (token, secret) = try issue(#"{"name": "a", "scopes": ["admin"]}"#)
        token.revokedAt = Self.now.addingTimeInterval(10)
        #expect(authenticate("Bearer " + secret.token, token, at: Self.now.addingTimeInterval(9)).isSuccess)
        #expect(authenticate("Bearer " + secret.token, token, at: Self.now.addingTimeInterval(10)) == .failure(.invalidToken(.revoked)))
    }

    @Test func rotationKeepsTheOldSecretForTheOverlapOnly() throws {
        var (token, old) = try issue(#"{"name": "a", "scopes": ["read"]}"#)
        let rotatedAt = Self.now.addingTimeInterval(100)
        let new = token.rotate(at: rotatedAt, overlap: 3600)
        #expect(new.id == token.id)
        #expect(new.token != old.token)
        #expect(token.secrets.count == 2)
        for at in [rotatedAt, rotatedAt.addingTimeInterval(3599)] {
            #expect(authenticate("Bearer " + old.token, token, at: at).isSuccess)
            #expect(authenticate("Bearer " + new.token, token, at: at).isSuccess)
        }
        let after = rotatedAt.addingTimeInterval(3600)
        #expect(authenticate("Bearer " + old.token, token, at: after) == .failure(.invalidToken(.retired)))
        #expect(authenticate("Bearer " + new.token, token, at: after).isSuccess)

        // A second rotation after the overlap drops the retired secret and keeps only the one just replaced.
        let newest = token.rotate(at: after, overlap: 60)
        #expect(token.secrets.count == 2)
        #expect(authenticate("Bearer " + new.token, token, at: after.addingTimeInterval(59)).isSuccess)
        #expect(authenticate("Bearer " + newest.token, token, at: after.addingTimeInterval(59)).isSuccess)
        #expect(authenticate("Bearer " + old.token, token, at: after.addingTimeInterval(59)) == .failure(.invalidToken(.wrongSecret)))
    }

    @Test func rotationWithoutOverlapRetiresTheOldSecretAtOnce() throws {
        var (token, old) = try issue(#"{"name": "a", "scopes": ["read"]}"#)
        let new = token.rotate(at: Self.now, overlap: 0)
        #expect(token.secrets.count == 1)
        #expect(authenticate("Bearer " + old.token, token) == .failure(.invalidToken(.wrongSecret)))
        #expect(authenticate("Bearer " + new.token, token).isSuccess)
    }

    @Test func bootstrapTokensAreAdminOverEverything() throws {
        let bootstrap = BootstrapTokens([(name: "ops", token: "s3cret-admin"), (name: "ci", token: "other")])
        let grant = try authenticate("Bearer s3cret-admin", nil, bootstrap: bootstrap).get()
        #expect(grant == Grant.bootstrap(name: "ops"))
        #expect(grant.tokenID == nil)
        #expect(grant.authorize(AccessRequest(scope: .admin, target: .allAccounts, environment: "production")) == nil)
        #expect(authenticate("Bearer s3cret-admiN", nil, bootstrap: bootstrap) == .failure(.invalidToken(.unknown)))
        #expect(!bootstrap.isEmpty)
        #expect(BootstrapTokens([]).isEmpty)
    }

    @Test func aValidTokenOutsideItsScopeAccountsOrEnvironmentsIs403NamingTheScope() throws {
        let (token, _) = try issue(#"{"name": "ci", "scopes": ["write"], "accounts": ["r3only-*"], "environments": ["staging"]}"#)
        let grant = token.grant
        #expect(grant.authorize(AccessRequest(scope: .write, target: .account("r3only-1"), environment: "staging")) == nil)
        #expect(grant.authorize(AccessRequest(scope: .read, target: .account("r3only-1"), environment: "staging")) == nil)
        #expect(grant.authorize(AccessRequest(scope: .write, target: .service)) == nil)

        let outside = try #require(grant.authorize(AccessRequest(scope: .write, target: .account("elsewhere-r3"), environment: "staging")))
        #expect(outside == .insufficientScope(.write, .account("elsewhere-r3")))
        #expect(outside.status == 403)
        #expect(outside.wwwAuthenticate == #"Bearer realm="tabserver", error="insufficient_scope", scope="write""#)

        let environment = grant.authorize(AccessRequest(scope: .write, target: .account("r3only-1"), environment: "production"))
        #expect(environment == .insufficientScope(.write, .environment("production")))
        let scope = grant.authorize(AccessRequest(scope: .deploy, target: .account("r3only-1"), environment: "staging"))
        #expect(scope == .insufficientScope(.deploy, .scope))
        #expect(scope?.wwwAuthenticate.hasSuffix(#"scope="deploy""#) == true)
        let strings = grant.authorize(AccessRequest(scope: .write, target: .allAccounts, environment: "staging"))
        #expect(strings == .insufficientScope(.write, .allAccounts))
    }

    @Test func listsKeepWhatTheTokenMayRead() throws {
        let grant = Grant(
            name: "dash", tokenID: nil, scopes: [.read], accounts: [try AccountGlob("shop-*"), try AccountGlob("jack")],
            environments: ["staging"])
        let accounts = ["default", "jack", "jill", "shop-berlin", "shop-paris", "shopx"]
        #expect(accounts.filter { grant.mayRead(account: $0, environment: "staging") } == ["jack", "shop-berlin", "shop-paris"])
        #expect(accounts.filter { grant.mayRead(account: $0, environment: "production") }.isEmpty)
        #expect(!grant.mayRead(account: nil, environment: nil))  // A strings table: accounts "*" only.
        #expect(Grant(name: "all", tokenID: nil, scopes: [.deploy]).mayRead(account: nil, environment: "any"))
        #expect(!Grant(name: "none", tokenID: nil, scopes: []).mayRead(account: "jack", environment: nil))
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}

@Suite struct RevocationTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func token(_ scopes: String, name: String) throws -> AccessToken {
        let spec = try TokenSpec(json: Array(#"{"name": "\#(name)", "scopes": \#(scopes)}"#.utf8), environments: [], now: Self.now)
        return AccessToken.issue(spec, createdBy: "root", at: Self.now).token
    }

    @Test func theLastActiveAdminTokenCannotBeRevokedWithoutABootstrapToken() throws {
        let admin = try token(#"["admin"]"#, name: "admin-1")
        var other = try token(#"["admin"]"#, name: "admin-2")
        let reader = try token(#"["read"]"#, name: "dash")
        let none = BootstrapTokens([])
        #expect(admin.revocationConflict(among: [admin, reader], bootstrap: none, at: Self.now) != nil)
        #expect(
            admin.revocationConflict(among: [admin, reader], bootstrap: BootstrapTokens([(name: "ops", token: "t")]), at: Self.now) == nil)
        #expect(admin.revocationConflict(among: [admin, other, reader], bootstrap: none, at: Self.now) == nil)
        #expect(reader.revocationConflict(among: [reader], bootstrap: none, at: Self.now) == nil)
        other.revokedAt = Self.now
        #expect(admin.revocationConflict(among: [admin, other], bootstrap: none, at: Self.now) != nil)
        other.revokedAt = nil
        other.expiresAt = Self.now
        #expect(admin.revocationConflict(among: [admin, other], bootstrap: none, at: Self.now) != nil)
        #expect(!other.isActive(at: Self.now))
        #expect(admin.isActive(at: Self.now))
    }
}

/// Nobody gives more than they hold: a narrowed `admin` may make, list, rotate and revoke only tokens within its own
/// grant, and make webhooks only for accounts within its own (docs/security.md, "A narrowed admin").
@Suite struct NarrowedGrantTests {
    static let narrowed = Grant(
        name: "ja-admin", tokenID: TokenID("aaaaaaaaaaaaaaaa"), scopes: [.admin], accounts: [try! AccountGlob("ja*")],
        environments: ["staging"])

    static func globs(_ texts: String...) -> [AccountGlob] { texts.map { try! AccountGlob($0) } }

    @Test func aNarrowedAdminCannotMakeAnUnrestrictedToken() {
        #expect(!Self.narrowed.encloses(scopes: [.admin], accounts: [.all], environments: nil))
        #expect(!Self.narrowed.encloses(scopes: [.write], accounts: Self.globs("ja*"), environments: nil), "every environment")
        #expect(!Self.narrowed.encloses(scopes: [.write], accounts: Self.globs("jill"), environments: ["staging"]))
        #expect(!Self.narrowed.encloses(scopes: [.write], accounts: Self.globs("j*"), environments: ["staging"]))
        #expect(!Self.narrowed.encloses(scopes: [.write], accounts: Self.globs("*a*"), environments: ["staging"]))
    }

    @Test func aNarrowedAdminMayGiveWhatItHolds() {
        #expect(Self.narrowed.encloses(scopes: [.write, .deploy], accounts: Self.globs("jack", "ja-*", "ja*x"), environments: ["staging"]))
        #expect(Self.narrowed.encloses(scopes: [.admin], accounts: Self.globs("ja*"), environments: ["staging"]))
        let writer = Grant(name: "w", tokenID: nil, scopes: [.write])
        #expect(!writer.encloses(scopes: [.deploy], accounts: [.all], environments: nil), "write does not give deploy")
        #expect(writer.encloses(scopes: [.read], accounts: [.all], environments: nil))
        #expect(Grant.bootstrap(name: "root").encloses(scopes: Set(Scope.allCases), accounts: [.all], environments: nil))
    }

    @Test func aGlobEnclosesWhatItsStarsSwallow() throws {
        func encloses(_ outer: String, _ inner: String) throws -> Bool { try AccountGlob(outer).encloses(AccountGlob(inner)) }
        #expect(try encloses("*", "*") && encloses("*", "ja*") && encloses("ja*", "ja*") && encloses("ja*", "jack"))
        #expect(try encloses("*ck", "ja*ck") && encloses("a*b*c", "a*b*c") && encloses("*a*", "*a"))
        #expect(try !encloses("ja*", "*") && !encloses("ja*", "j*") && !encloses("*ck", "ja*") && !encloses("jack", "ja*"))
        #expect(try !encloses("a*b", "a*") && !encloses("*x*y", "*y"))
    }

    @Test func webhooksNeedTheAccountsAndEveryEnvironment() {
        #expect(!Self.narrowed.encloses(webhookAccounts: [.all]))
        #expect(!Self.narrowed.encloses(webhookAccounts: Self.globs("jack")), "a webhook hears every environment")
        let everywhere = Grant(name: "ja", tokenID: nil, scopes: [.admin], accounts: Self.globs("ja*"))
        #expect(everywhere.encloses(webhookAccounts: Self.globs("jack", "ja-*")))
        #expect(!everywhere.encloses(webhookAccounts: Self.globs("jill")))
    }
}
