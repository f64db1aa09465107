// Not part of the library: make check-api-selftest compiles it to prove that check-api refuses what Android 24 lacks.
final class Api26Probe {
    private Api26Probe() {}

    static String probe(int i, long a, long b) throws Exception {
        return Integer.toUnsignedString(i) + Long.remainderUnsigned(a, b)
                + Api26Probe.class.getDeclaredMethod("probe", int.class, long.class, long.class).getParameters().length
                + java.util.Base64.getEncoder().encodeToString(new byte[] {1});
    }
}
