/// Bytes of PROXY protocol version 2 headers, for the tests that send one.
public enum ProxyHeaderBytes {
    /// The twelve bytes every version 2 header starts with.
    public static let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    /// An IPv4 address block: from 203.0.113.7 port 51234 to 192.0.2.1 port 443.
    public static let ipv4Block: [UInt8] = [203, 0, 113, 7, 192, 0, 2, 1, 0xC8, 0x22, 0x01, 0xBB]
}
