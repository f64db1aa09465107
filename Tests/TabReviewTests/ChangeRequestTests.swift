import Testing

@testable import TabReview

@Suite struct ChangeRequestTests {
    static func request(required: Int = 2) -> ChangeRequest {
        ChangeRequest(
            id: "cr_1", author: "alice", createdAtMillis: 1_000, environment: "production", account: "jack", action: "layout.put",
            version: 4, ifMatch: ["\"v3\""], required: required, applyAtMillis: nil)
    }

    @Test func distinctApproversOtherThanTheAuthorApprove() throws {
        let request = Self.request()
        #expect(throws: ReviewError.ownChange) { try request.approved(by: "alice", atMillis: 2_000) }
        let once = try request.approved(by: "bob", atMillis: 2_000)
        #expect(once.state == .open && once.approvals.map(\.by) == ["bob"])
        #expect(throws: ReviewError.alreadyApproved("bob")) { try once.approved(by: "bob", atMillis: 3_000) }
        let twice = try once.approved(by: "carol", atMillis: 3_000, applyAtMillis: 9_000)
        #expect(twice.state == .approved && twice.applyAtMillis == 9_000)
        #expect(!twice.isDue(atMillis: 8_999) && twice.isDue(atMillis: 9_000))
        #expect(ChangeRequest(json: twice.json) == twice)
    }

    @Test func anApprovedRequestsApplyAtIsFirm() throws {
        let approved = try Self.request(required: 1).approved(by: "bob", atMillis: 2_000, applyAtMillis: 9_000)
        let more = try approved.approved(by: "carol", atMillis: 3_000)
        #expect(more.applyAtMillis == 9_000, "an approval without applyAt leaves it")
        #expect(throws: ReviewError.applyAtSettled) { try approved.approved(by: "carol", atMillis: 3_000, applyAtMillis: 4_000) }
        #expect(throws: ReviewError.notYet(9_000)) { try approved.checkApplicable(atMillis: 8_999) }
        try approved.checkApplicable(atMillis: 9_000)
        #expect(throws: ReviewError.notApproved(.open)) { try Self.request().checkApplicable(atMillis: 9_000) }
    }

    @Test func rejectedAndCancelledAreFinal() throws {
        let rejected = try Self.request().rejected(reason: "not before the campaign", atMillis: 2_000)
        #expect(rejected.state == .rejected && rejected.reason == "not before the campaign")
        #expect(throws: ReviewError.notOpen(.rejected)) { try rejected.approved(by: "bob", atMillis: 3_000) }
        #expect(throws: ReviewError.notTheAuthor) { try Self.request().cancelled(by: "bob", isAdmin: false, atMillis: 2_000) }
        #expect(try Self.request().cancelled(by: "root", isAdmin: true, atMillis: 2_000).state == .cancelled)
    }

    @Test func thePolicyReadsEnvironmentsAndCounts() throws {
        var policy = ApprovalPolicy()
        try policy.add("production")
        try policy.add("staging:2")
        #expect(policy.approvals(for: "production") == 1 && policy.approvals(for: "staging") == 2 && policy.approvals(for: "dev") == nil)
        for bad in ["", ":2", "production:0", "production:x", "a:1:2"] {
            #expect(throws: ReviewError.Parse.self) { try policy.add(bad) }
        }
    }
}
