import ArgumentParser
import Testing

@testable import tabserver

/// The per-address bounds of the apps' reports: their defaults, a value, 0 for none, and a negative one refused.
@Suite struct ReportLimitFlagTests {
    @Test func theDefaultsAreAHundredInstallsAndSixHundredRequestsAMinute() throws {
        let limits = try Serve.parse([]).reportLimitsPerAddress()
        #expect(limits.installs == 100 && limits.requestsPerMinute == 600)
    }

    @Test func eitherIsSetAndZeroIsNoLimit() throws {
        let limits = try Serve.parse(["--report-requests-per-minute", "6000", "--report-installs-per-address", "0"])
            .reportLimitsPerAddress()
        #expect(limits.installs == 0 && limits.requestsPerMinute == 6000)
        #expect(try Serve.parse(["--report-requests-per-minute", "0"]).reportLimitsPerAddress().requestsPerMinute == 0)
    }

    @Test func aNegativeBoundIsAUsageError() throws {
        #expect(throws: ValidationError.self) { try Serve.parse(["--report-requests-per-minute=-1"]).reportLimitsPerAddress() }
        #expect(throws: ValidationError.self) { try Serve.parse(["--report-installs-per-address=-1"]).reportLimitsPerAddress() }
    }
}
