import TabWebhooks
import Testing

@Suite struct WebhookURLTests {
    @Test func httpAndHttpsURLsAreReadIntoHostPortAndTarget() throws {
        let url = try WebhookURL("HTTPS://Hooks.Example.COM/tabs/changed?team=ios#frag")
        #expect(url.scheme == "https")
        #expect(url.host == .name("hooks.example.com"))
        #expect(url.port == 443)
        #expect(url.target == "/tabs/changed?team=ios")
        #expect(url.description == "https://hooks.example.com/tabs/changed?team=ios")

        let plain = try WebhookURL("http://203.0.113.9:8080")
        #expect(plain.host == .address(IPAddress("203.0.113.9")!))
        #expect(plain.port == 8080)
        #expect(plain.target == "/")
        #expect(try WebhookURL("http://example.com?x=1").target == "/?x=1")

        let v6 = try WebhookURL("https://[2001:db8::1]:8443/h")
        #expect(v6.host == .address(IPAddress("2001:db8::1")!))
        #expect(v6.hostText == "[2001:db8::1]")
        #expect(v6.port == 8443)
        #expect(try WebhookURL("http://example.com./").host == .name("example.com."))
        #expect(try WebhookURL("http://my_host.example.com/").host == .name("my_host.example.com"))
    }

    @Test(arguments: [
        "ftp://example.com/", "file:///etc/passwd", "gopher://example.com/", "javascript:alert(1)", "example.com/hook",
        "//example.com/", "http://user:pass@example.com/", "http://user@example.com/", "http://example.com@evil.com/",
        "http://exa%6Dple.com/", "http://example.com:0/", "http://example.com:65536/", "http://example.com:/",
        "http://example.com:80a/", "http://example.com:+80/", "http:///path", "http://ex ample.com/", "http://example.com/a b",
        "http://example.com\\@evil.com/", "http://exämple.com/", "http://2130706433/", "http://0x7f.0.0.1/", "http://017.0.0.1/",
        "http://127.1/", "http://1.2.3/", "http://[::1/", "http://[::1]x/", "http://[1.2.3.4]/", "http://[fe80::1%25eth0]/",
        "http://-/", "http://a..b/", "http://\(String(repeating: "a", count: 64)).com/", "http://example.com\t/",
    ])
    func urlsThatCouldReachSomewhereElseAreRefused(_ text: String) {
        #expect(throws: WebhookAddressError.self) { try WebhookURL(text) }
    }
}
