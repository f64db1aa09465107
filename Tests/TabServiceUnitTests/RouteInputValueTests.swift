import TabDelivery
import TabLayout
import TabReview
import Testing

@testable import TabService

/// The write side's input types refuse what their routes always refused, with the same problem (status and detail).
@Suite struct RouteInputValueTests {
    /// The problem `parse` refuses `text` with, nil when it accepts it.
    private func refusal(_ parse: (String) throws(InputRefusal) -> Void, _ text: String) -> Problem? {
        do throws(InputRefusal) {
            try parse(text)
            return nil
        } catch {
            guard case .problem(let problem) = error else { return nil }
            return problem
        }
    }

    @Test func accountNameRefusesWhatIsNoAccountWith400() {
        let parse = { (text: String) throws(InputRefusal) in _ = try AccountName(input: text, named: "account") }
        #expect(refusal(parse, "acme-1.b_c") == nil)
        let problem = refusal(parse, "a b")
        #expect(problem?.status == 400 && problem?.detail == Problem.invalidAccount.detail)
        #expect(refusal(parse, String(repeating: "a", count: 129))?.status == 400)
    }

    @Test func versionNumberRefusesZeroAndText() {
        let parse = { (text: String) throws(InputRefusal) in _ = try VersionNumber(input: text, named: "version") }
        #expect(refusal(parse, "3") == nil)
        #expect(refusal(parse, "0")?.detail == "a version number is an integer ≥ 1, not '0'")
        #expect(refusal(parse, "x")?.status == 400)
    }

    @Test func localeTagRefusesWhatIsNoTag() {
        let parse = { (text: String) throws(InputRefusal) in _ = try LocaleTag(input: text, named: "locale") }
        #expect(refusal(parse, "fr-CA") == nil)
        #expect(refusal(parse, "1")?.detail == "'1' is not a locale tag such as en or fr-CA")
    }

    @Test func publishIsTrueOrFalseOnly() {
        let parse = { (text: String) throws(InputRefusal) in _ = try PublishMode(input: text, named: "publish") }
        #expect(refusal(parse, "false") == nil)
        let problem = refusal(parse, "yes")
        #expect(problem?.status == 400 && problem?.detail == "?publish: 'yes' is neither true nor false")
    }

    @Test func optInFlagsAreOnOnlyForTrue() {
        #expect(OptIn(input: "true", named: "dryRun").isOn)
        #expect(!OptIn(input: "1", named: "dryRun").isOn)
    }

    @Test func applyAtRefusesWhatIsNotRFC3339With422AtItsPointer() {
        let parse = { (text: String) throws(InputRefusal) in _ = try ApplyAt(input: text, named: "Apply-At") }
        #expect(refusal(parse, "2026-12-01T09:00:00Z") == nil)
        let problem = refusal(parse, "tomorrow")
        #expect(problem?.status == 422 && problem?.errors.first?.pointer == "/Apply-At")
    }

    @Test func buildPathRefusesUnknownPlatformsAndVersionsWith404() {
        #expect(
            refusal({ (text: String) throws(InputRefusal) in _ = try BuildPlatform(input: text, named: "platform") }, "nokia")?.status
                == 404)
        #expect(
            refusal({ (text: String) throws(InputRefusal) in _ = try BuildVersion(input: text, named: "appVersion") }, "v2")?.status == 404)
    }

    @Test func pageSizesAndCursorsRefuseWhatTheyAlwaysRefused() {
        #expect(
            refusal({ (text: String) throws(InputRefusal) in _ = try ListPageSize(input: text, named: "limit") }, "1001")?.detail
                == "limit is an integer from 1 to 1000")
        #expect(
            refusal({ (text: String) throws(InputRefusal) in _ = try VersionCursor(input: text, named: "against") }, "0")?.detail
                == "against is a version number ≥ 1, not '0'")
        #expect(ChangeRequestPageSize(input: "9999", named: "limit").value == 500)
        #expect(ChangeRequestPageSize(input: "x", named: "limit").value == 100)
        #expect(
            refusal({ (text: String) throws(InputRefusal) in _ = try ChangeRequestState(input: text, named: "state") }, "done")?.status
                == 400)
    }

    @Test func sharedComponentsAndDescriptionsAreKeptInOpenAPI() {
        #expect(ManagementInputs.accountPath.parameterYAML == "$ref: '#/components/parameters/account'")
        #expect(ManagementInputs.preconditions[0].parameterYAML == "$ref: '#/components/parameters/ifMatch'")
        #expect(
            ManagementInputs.writeOptions[2].parameterYAML
                == "{name: Apply-At, in: header, description: 'RFC 3339: when an approved change request is applied.', schema: {type: string, format: date-time}}"
        )
    }
}
