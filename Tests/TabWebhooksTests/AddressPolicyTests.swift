import TabWebhooks
import Testing

@Suite struct IPAddressTests {
    @Test func addressesAreReadAndWrittenInTheirCanonicalForms() throws {
        let cases = [
            ("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("::", "::"), ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
            ("2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"), ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"), ("::ffff:10.0.0.1", "::ffff:10.0.0.1"),
            ("::ffff:a00:1", "::ffff:10.0.0.1"), ("::10.0.0.1", "::a00:1"),
            ("fe80::1:2", "fe80::1:2"), ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"), ("1::", "1::"), ("0:0:1::", "0:0:1::"),
            ("1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7"),
        ]
        for (text, canonical) in cases {
            let address = try #require(IPAddress(text), "\(text)")
            #expect(address.description == canonical, "\(text)")
            #expect(IPAddress(canonical) == address)
        }
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "0x7f.0.0.1", "2130706433", "1.2.3.-4", " 1.2.3.4", "1.2.3.4 ", "::1%lo",
        ":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "g::", "1:2:3:4:5:6:7", ":1::", "1::2:", "::1.2.3", "[::1]", "::+1",
    ])
    func textThatIsNotAnAddressIsRefused(_ text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func blocksContainTheirAddressesAndRefuseHostBits() throws {
        let block = try #require(CIDR("10.0.0.0/8"))
        #expect(block.contains(try #require(IPAddress("10.255.0.1"))))
        #expect(!block.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(!block.contains(try #require(IPAddress("::ffff:10.0.0.1"))))  // Families are kept apart here.
        #expect(CIDR("10.0.0.1/8") == nil)
        #expect(CIDR("10.0.0.0/33") == nil)
        #expect(CIDR("10.0.0.0/") == nil)
        #expect(CIDR("10.0.0.0/+8") == nil)
        #expect(try #require(CIDR("fd00::/8")).contains(try #require(IPAddress("fd12:3456::1"))))
        #expect(try #require(CIDR("192.0.2.7")).prefixLength == 32)
        #expect(try #require(CIDR("100.64.0.0/10")).contains(try #require(IPAddress("100.127.255.255"))))
        #expect(!(try #require(CIDR("100.64.0.0/10")).contains(try #require(IPAddress("100.128.0.0")))))
    }
}

@Suite struct AddressPolicyTests {
    static let refused: [(String, AddressPolicy.Range)] = [
        ("0.0.0.0", .unspecified), ("0.1.2.3", .unspecified), ("127.0.0.1", .loopback), ("127.255.255.254", .loopback),
        ("10.0.0.1", .private), ("172.16.0.1", .private), ("172.31.255.255", .private), ("192.168.1.1", .private),
        ("169.254.169.254", .linkLocal), ("100.64.0.1", .sharedAddressSpace), ("100.127.255.255", .sharedAddressSpace),
        ("224.0.0.1", .multicast), ("239.255.255.250", .multicast), ("255.255.255.255", .broadcast), ("240.0.0.1", .reserved),
        ("192.0.0.8", .reserved), ("198.18.0.1", .reserved),
        ("::", .unspecified), ("::1", .loopback), ("fc00::1", .private), ("fd12:3456::1", .private), ("fe80::1", .linkLocal),
        ("febf::1", .linkLocal), ("fec0::1", .private), ("ff02::1", .multicast), ("::ffff:127.0.0.1", .loopback),
        ("::ffff:169.254.169.254", .linkLocal), ("::ffff:10.1.2.3", .private), ("::127.0.0.1", .loopback),
        ("64:ff9b::7f00:1", .loopback), ("::ffff:0:7f00:1", .loopback), ("::ffff:0:a00:1", .private), ("64:ff9b::a9fe:a9fe", .linkLocal),
        ("64:ff9b:1::1", .private),
        ("2002:7f00:1::", .loopback), ("2002:c0a8:101::1", .private), ("2001:0:4136:e378::1", .reserved), ("100::1", .reserved),
    ]

    @Test func everyRefusedRangeIsRefusedAndNamed() throws {
        let policy = AddressPolicy()
        for (text, range) in Self.refused {
            #expect(policy.refusal(for: try #require(IPAddress(text), "\(text)")) == range, "\(text)")
        }
    }

    @Test(arguments: [
        "93.184.216.34", "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.0", "100.63.255.255", "100.128.0.0", "169.253.0.1",
        "192.167.1.1", "223.255.255.255", "2606:4700::1111", "2a00:1450:4001::200e", "::ffff:8.8.8.8", "64:ff9b::808:808",
        "2002:808:808::1", "fbff::1", "fe7f::1",
    ])
    func publicAddressesAreAdmitted(_ text: String) throws {
        #expect(AddressPolicy().refusal(for: try #require(IPAddress(text))) == nil)
    }

    @Test func anAllowlistAdmitsItsBlocksAndTheirIPv6FormsOnly() throws {
        let policy = AddressPolicy(allowlist: [try #require(CIDR("10.1.0.0/16")), try #require(CIDR("fd00:1::/32"))])
        #expect(policy.refusal(for: try #require(IPAddress("10.1.2.3"))) == nil)
        #expect(policy.refusal(for: try #require(IPAddress("::ffff:10.1.2.3"))) == nil)
        #expect(policy.refusal(for: try #require(IPAddress("fd00:1::5"))) == nil)
        #expect(policy.refusal(for: try #require(IPAddress("10.2.0.1"))) == .private)
        #expect(policy.refusal(for: try #require(IPAddress("fd00:2::5"))) == .private)
        #expect(policy.refusal(for: try #require(IPAddress("127.0.0.1"))) == .loopback)
        for (text, _) in Self.refused {
            #expect(AddressPolicy.allowEverything.refusal(for: try #require(IPAddress(text))) == nil, "\(text)")
        }
    }
}

/// Fixed answers, as a DNS server an attacker controls might give them.
struct FixedResolver: HostResolver {
    let answers: [String: [String]]

    func addresses(of host: String) async throws(WebhookAddressError) -> [IPAddress] {
        guard let texts = answers[host] else { throw .unresolvable(host: host, reason: "Name or service not known") }
        return texts.compactMap(IPAddress.init)
    }
}

@Suite struct DestinationTests {
    let resolver = FixedResolver(answers: [
        "hooks.example.com": ["93.184.216.34", "2606:2800:220:1::1"],
        "rebind.example.com": ["93.184.216.34", "127.0.0.1"],
        "metadata.example.com": ["169.254.169.254"],
        "mapped.example.com": ["::ffff:192.168.0.1"],
        "empty.example.com": [],
    ])

    func destination(_ url: String, policy: AddressPolicy = AddressPolicy()) async throws(WebhookAddressError) -> Destination {
        try await policy.destination(for: try WebhookURL(url), resolver: resolver)
    }

    @Test func aPublicNameGivesEveryAddressToConnectTo() async throws {
        let destination = try await destination("https://hooks.example.com/tabs")
        #expect(destination.addresses.map(\.description) == ["93.184.216.34", "2606:2800:220:1::1"])
        #expect(destination.url.hostText == "hooks.example.com")
    }

    @Test func oneRefusedAddressAmongManyRefusesTheURL() async throws {
        await #expect(throws: WebhookAddressError.refused(host: "rebind.example.com", address: IPAddress("127.0.0.1")!, range: .loopback)) {
            try await destination("https://rebind.example.com/")
        }
        await #expect(
            throws: WebhookAddressError.refused(host: "metadata.example.com", address: IPAddress("169.254.169.254")!, range: .linkLocal)
        ) {
            try await destination("http://metadata.example.com/latest/meta-data/")
        }
        await #expect(
            throws: WebhookAddressError.refused(host: "mapped.example.com", address: IPAddress("::ffff:192.168.0.1")!, range: .private)
        ) {
            try await destination("http://mapped.example.com/")
        }
    }

    @Test func literalAddressesAreCheckedWithoutResolving() async throws {
        await #expect(throws: WebhookAddressError.refused(host: "127.0.0.1", address: IPAddress("127.0.0.1")!, range: .loopback)) {
            try await destination("http://127.0.0.1:1/hook")
        }
        await #expect(throws: WebhookAddressError.self) { try await destination("http://[::ffff:7f00:1]/") }
        await #expect(throws: WebhookAddressError.self) { try await destination("http://[fd00::1]:8080/") }
        #expect(try await destination("http://8.8.8.8/").addresses == [IPAddress("8.8.8.8")!])
        #expect(try await destination("http://127.0.0.1:1/hook", policy: .allowEverything).addresses == [IPAddress("127.0.0.1")!])
    }

    @Test func namesWithoutAddressesAreUnresolvable() async {
        await #expect(throws: WebhookAddressError.unresolvable(host: "nowhere.example.com", reason: "Name or service not known")) {
            try await destination("https://nowhere.example.com/")
        }
        await #expect(throws: WebhookAddressError.unresolvable(host: "empty.example.com", reason: "no addresses")) {
            try await destination("https://empty.example.com/")
        }
    }

    @Test func theRefusalOfANameSaysOnlyThatItsAddressIsPrivate() {
        let error = WebhookAddressError.refused(host: "rebind.example.com", address: IPAddress("10.1.2.3")!, range: .private)
        #expect(error.description == "'rebind.example.com' resolves to a private address; webhooks may not be delivered there")
        #expect(!error.description.contains("10.1.2.3"), "what a name resolves to is not told")
        let literal = WebhookAddressError.refused(host: "127.0.0.1", address: IPAddress("127.0.0.1")!, range: .loopback)
        #expect(literal.description == "127.0.0.1 is a loopback address; webhooks may not be delivered there")
    }
}

/// The real resolver, on the one name every machine resolves locally.
@Suite struct SystemResolverTests {
    @Test func localhostResolvesToLoopbackAndIsRefused() async throws {
        let addresses = try await SystemResolver().addresses(of: "localhost")
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { AddressPolicy.range(of: $0) == .loopback }, "\(addresses)")
        #expect(Set(addresses).count == addresses.count)
        let url = try WebhookURL("http://localhost:8080/hook")
        await #expect(throws: WebhookAddressError.self) { try await AddressPolicy().destination(for: url, resolver: SystemResolver()) }
        let admitted = try await AddressPolicy.allowEverything.destination(for: url, resolver: SystemResolver())
        #expect(admitted.addresses == addresses)
    }

    @Test func aNameUnderTheInvalidTopLevelDomainDoesNotResolve() async {
        // RFC 6761 §6.4: resolvers answer "no such name" for .invalid without asking anyone.
        await #expect(throws: WebhookAddressError.self) { try await SystemResolver().addresses(of: "no-such-host.invalid") }
    }
}
