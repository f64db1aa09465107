import ArgumentParser
import MicroHTTPD
import TabRuntime
import Testing

@testable import tabserver

/// `--proxy-protocol` trusts the `--trusted-proxy` list, and without one refuses to start.
@Suite struct ProxyProtocolFlagTests {
    @Test func theFlagTakesTheTrustedProxiesAsTheBalancers() throws {
        let serve = try Serve.parse(["--proxy-protocol"])
        let settings = try serve.proxyProtocolSettings(Environment(), trustedProxies: ["10.0.0.5", "10.1.0.0/16"])
        #expect(settings?.trustedPeers == ["10.0.0.5", "10.1.0.0/16"])
        #expect(try Serve.parse([]).proxyProtocolSettings(Environment(), trustedProxies: ["10.0.0.5"]) == nil, "off unless asked for")
    }

    @Test func theFlagWithoutTrustedProxiesOrWithABadOneIsAUsageError() throws {
        let serve = try Serve.parse(["--proxy-protocol"])
        #expect(throws: ValidationError.self) { try serve.proxyProtocolSettings(Environment(), trustedProxies: []) }
        #expect(throws: ValidationError.self) { try serve.proxyProtocolSettings(Environment(), trustedProxies: ["balancer.internal"]) }
    }
}
