package io.tabserver.tabclient;

import java.io.File;
import java.io.UnsupportedEncodingException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLEncoder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/** Where a {@link TabClient} asks, who it says it is, where it keeps the last good layout, and how long it waits. */
public final class TabClientConfig {
    /** The server, e.g. {@code https://tabs.example.com} (paths below {@code /v1/accounts/…} are added). */
    public final String server;
    public final String account;
    /** Sent as {@code Accept-Language}, best first. */
    public final List<String> preferredLanguages;
    /** Sent as {@code X-Client-Platform} ({@code android} unless set; null sends none). */
    public final String platform;
    /** Sent as {@code X-App-Version} (the app's {@code versionName} unless set; null sends none). */
    public final String appVersion;
    /** Sent as {@code Tabs-Environment}; null sends none (the server's default environment). */
    public final String environment;
    /** The app's own install id, or null: a random one is made once and kept in {@link #cacheDirectory}. */
    public final String installId;
    /** Where the last good layout and the install id are kept; null keeps them in memory only. */
    public final File cacheDirectory;
    public final int requestTimeoutMillis;
    public final int longPollWaitSeconds;
    public final long initialBackoffMillis;
    public final long maximumBackoffMillis;
    /**
     * Manifest mode: ask {@code …/tabs/manifest} (the same for every install), choose this install's arm on the device
     * ({@link Bucket}) and fetch that version by number ({@code …/tabs?version=N}); no install id is sent.
     */
    public final boolean manifestMode;
    /** The keys whose signature a layout or manifest must carry, or null (no signature checked). */
    public final SigningKeys signingKeys;
    /** The device's clock, against which manifest mode times a rollout's coming steps ({@link DeviceClock#SYSTEM} unless set). */
    public final DeviceClock clock;
    /**
     * The launch guard ({@link TabClient#markRendered()}): after this many launches in a row that end before the app calls
     * {@code markRendered()} for a layout newly shown, the client goes back to the last layout that rendered and blocks
     * that version. Default 2; 0 turns it off (blocked and revoked versions are still refused).
     */
    public final int launchAttempts;
    /** The launch guard in one run: a layout newly shown and not rendered within this time (by {@link #clock}) is undone. Default 10 s; 0: off. */
    public final long readyTimeoutMillis;
    /** Whether the client queues reports and sends them to {@code …/tabs/reports} (default true; tests turn it off unless they test it). */
    public final boolean reports;
    final TabClient.EventListener onEvent;

    private TabClientConfig(Builder b) {
        server = b.server;
        account = b.account;
        preferredLanguages = Collections.unmodifiableList(new ArrayList<String>(b.preferredLanguages));
        platform = b.platform;
        appVersion = b.appVersion;
        environment = b.environment;
        installId = b.installId;
        cacheDirectory = b.cacheDirectory;
        requestTimeoutMillis = b.requestTimeoutMillis;
        longPollWaitSeconds = b.longPollWaitSeconds;
        initialBackoffMillis = b.initialBackoffMillis;
        maximumBackoffMillis = b.maximumBackoffMillis;
        manifestMode = b.manifestMode;
        signingKeys = b.signingKeys;
        clock = b.clock;
        launchAttempts = b.launchAttempts;
        readyTimeoutMillis = b.readyTimeoutMillis;
        reports = b.reports;
        onEvent = b.onEvent;
    }

    /** A configuration for {@code account} on {@code server}, everything else defaulted. */
    public static Builder builder(String server, String account) { return new Builder(server, account); }

    public static final class Builder {
        private final String server;
        private final String account;
        private List<String> preferredLanguages = defaultLanguages();
        private String platform = "android";
        private String appVersion;
        /** Whether {@link #appVersion(String)} was called: only then is the app's own version not looked up (by reflection). */
        private boolean appVersionGiven;
        private String environment;
        private String installId;
        private File cacheDirectory;
        private int requestTimeoutMillis = 15000;
        private int longPollWaitSeconds = 50;
        private long initialBackoffMillis = 1000;
        private long maximumBackoffMillis = 60000;
        private boolean manifestMode;
        private SigningKeys signingKeys;
        private DeviceClock clock = DeviceClock.SYSTEM;
        private int launchAttempts = 2;
        private long readyTimeoutMillis = 10000;
        private boolean reports = true;
        private TabClient.EventListener onEvent;

        private Builder(String server, String account) {
            this.server = server;
            this.account = account;
        }

        /** Best first, e.g. {@code fr-CA, en} (default: the user's locales, Android's {@code LocaleList}). */
        public Builder preferredLanguages(List<String> languages) { preferredLanguages = languages; return this; }

        public Builder preferredLanguages(String... languages) { return preferredLanguages(Arrays.asList(languages)); }

        /** {@code android} by default; null sends no {@code X-Client-Platform} (the server then gives every tab). */
        public Builder platform(String name) { platform = name; return this; }

        /**
         * The dotted version sent as {@code X-App-Version}: pass {@code BuildConfig.VERSION_NAME}. By default, the
         * leading dotted numbers of the app's {@code versionName} ({@code 2.1.0-beta} sends {@code 2.1.0}); none on a JVM.
         */
        public Builder appVersion(String version) {
            appVersion = version;
            appVersionGiven = true;
            return this;
        }

        /** The environment, e.g. {@code staging} for testers' builds ({@code [a-z][a-z0-9_-]{0,31}}). */
        public Builder environment(String name) { environment = name; return this; }

        /** The app's own install id (never the device's or the user's); by default a random one kept in the cache directory. */
        public Builder installId(String id) { installId = id; return this; }

        /** Where to keep the last good layout and the install id: {@code new File(context.getCacheDir(), "tabclient")}. */
        public Builder cacheDirectory(File directory) { cacheDirectory = directory; return this; }

        /** The longest a request may take, apart from the time a long-poll is held (default 15 s). */
        public Builder requestTimeoutMillis(int millis) { requestTimeoutMillis = millis; return this; }

        /** How long the server may hold a long-poll (default 50 s; keep it under every proxy's idle timeout). */
        public Builder longPollWaitSeconds(int seconds) { longPollWaitSeconds = seconds; return this; }

        /** The first delay after a failure (default 1 s); it doubles per failure in a row up to the maximum (60 s), less up to half. */
        public Builder backoffMillis(long initial, long maximum) {
            initialBackoffMillis = initial;
            maximumBackoffMillis = maximum;
            return this;
        }

        /**
         * Manifest mode (docs/android.md, "Manifest mode"): the manifest and versions by number, which shared caches and
         * CDNs can serve to every install; the arm is chosen on the device. Default false ({@code …/tabs}).
         */
        public Builder manifestMode(boolean on) { manifestMode = on; return this; }

        /**
         * Pins signing keys ({@link SigningKeys#fromBase64}, {@link SigningKeys#fromKeysDocument}): anything unsigned or
         * not verifying is then refused, from the network, cache or bundle. Null (the default) checks nothing.
         */
        public Builder signingKeys(SigningKeys keys) { signingKeys = keys; return this; }

        /** The device's clock for a rollout's scheduled steps (manifest mode): the system's by default; tests give one they move. */
        public Builder clock(DeviceClock deviceClock) { clock = deviceClock == null ? DeviceClock.SYSTEM : deviceClock; return this; }

        /** Whether reports are queued and sent (default true). */
        public Builder reports(boolean on) { reports = on; return this; }

        /** The launch guard's launches in a row that may end before {@code markRendered()} (default 2; 0: off). */
        public Builder launchAttempts(int count) { launchAttempts = Math.max(0, count); return this; }

        /** The launch guard's wait for {@code markRendered()} in one run, by the device's clock (default 10 000 ms; 0: off). */
        public Builder readyTimeoutMillis(long millis) { readyTimeoutMillis = Math.max(0, millis); return this; }

        /** Told about every request's outcome (for logs and tests), on the client's own threads. */
        public Builder onEvent(TabClient.EventListener listener) { onEvent = listener; return this; }

        public TabClientConfig build() {
            if (!appVersionGiven) appVersion = dottedPrefix(AndroidApp.versionName());
            return new TabClientConfig(this);
        }
    }

    /** The user's locales as language tags: Android's {@code LocaleList.getDefault()}, else the JVM's default locale. */
    static List<String> defaultLanguages() {
        String tags = AndroidApp.localeTags();
        if (tags != null && !tags.isEmpty()) return Arrays.asList(tags.split(","));
        return Collections.singletonList(Locale.getDefault().toLanguageTag());
    }

    /** The leading {@code N(.N){0,3}} of {@code text} (what the server reads as an app version), or null. */
    static String dottedPrefix(String text) {
        if (text == null) return null;
        int i = 0;
        int parts = 0;
        int good = 0;
        while (parts < 4) {
            int start = i;
            while (i < text.length() && text.charAt(i) >= '0' && text.charAt(i) <= '9') i++;
            if (i == start || i - start > 9) break;
            parts++;
            good = i;
            if (i >= text.length() || text.charAt(i) != '.') break;
            i++;
        }
        return parts == 0 ? null : text.substring(0, good);
    }

    /** Whether {@code text} is a version the server accepts: 1 to 4 dot-separated numbers of at most 9 digits. */
    static boolean isAppVersion(String text) {
        String prefix = dottedPrefix(text);
        return prefix != null && prefix.length() == text.length();
    }

    /** What is wrong with {@code name} as an environment name ({@code [a-z][a-z0-9_-]{0,31}}), or null. */
    static String environmentProblem(String name) {
        if (name.isEmpty()) return "an environment name is empty";
        char first = name.charAt(0);
        if (first < 'a' || first > 'z') return "an environment name starts with a lowercase letter a-z";
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
                return "an environment name has only lowercase letters a-z, digits, '-' and '_'";
            }
        }
        if (name.length() > 32) return "an environment name has at most 32 characters; this one has " + name.length();
        return null;
    }

    /** Checks the environment, install id and app version before anything is sent. */
    void validate() throws TabClientException {
        if (environment != null) {
            String problem = environmentProblem(environment);
            if (problem != null) {
                throw new TabClientException(TabClientException.Kind.INVALID_ENVIRONMENT, "invalid environment \"" + environment + "\": " + problem);
            }
        }
        if (installId != null) {
            String problem = InstallId.problem(installId);
            if (problem != null) throw new TabClientException(TabClientException.Kind.INVALID_INSTALL_ID, "invalid install id: " + problem);
        }
        if (appVersion != null && !isAppVersion(appVersion)) {
            throw new TabClientException(TabClientException.Kind.INVALID_APP_VERSION,
                    "invalid app version \"" + appVersion + "\": a dotted version such as 2.1 or 3.0.2");
        }
    }

    /**
     * {@code …/v1/accounts/{account}/tabs}, with {@code ?wait=N} for a long-poll, and {@code installId=} for an install id
     * that is not printable ASCII (see {@link #headerSafe}).
     */
    URL tabsURL(Integer waitSeconds, String installId) throws TabClientException {
        StringBuilder query = new StringBuilder();
        if (waitSeconds != null) query.append("?wait=").append(waitSeconds);
        if (!headerSafe(installId)) query.append(query.length() == 0 ? '?' : '&').append("installId=").append(encode(installId));
        return url("/tabs" + query);
    }

    /**
     * Whether {@code value} can go in a header field as is: printable ASCII. Android's HTTP stack refuses anything else
     * (an exception), and a JVM's writes it in the locale's charset ({@code ?} under {@code LANG=C}), so the server
     * would bucket another id: such an id goes as {@code ?installId=}, percent-encoded UTF-8, which the server reads
     * first.
     */
    static boolean headerSafe(String value) {
        for (int i = 0; i < value.length(); i++) {
            if (value.charAt(i) < 0x20 || value.charAt(i) > 0x7E) return false;
        }
        return true;
    }

    /**
     * {@code …/v1/accounts/{account}/tabs?version=N&environment=E}: one version, immutable (manifest mode). {@code E} is the
     * manifest's environment: its signature names it, so the URL does too and no shared cache hands one environment's copy
     * to another.
     */
    URL tabsURL(int version, String environment) throws TabClientException {
        return url("/tabs?version=" + version + "&environment=" + encode(environment));
    }

    /** {@code …/v1/accounts/{account}/tabs/reports}. */
    URL reportsURL() throws TabClientException { return url("/tabs/reports"); }

    /** {@code …/v1/accounts/{account}/tabs/manifest}, with {@code ?wait=N} for a long-poll. */
    URL manifestURL(Integer waitSeconds) throws TabClientException {
        return url("/tabs/manifest" + (waitSeconds == null ? "" : "?wait=" + waitSeconds));
    }

    /**
     * The environment named in the bytes a signature covers: {@link #environment}, else {@code production} (the server's
     * default). A client of a server whose last environment has another name sets the environment.
     */
    public String signatureEnvironment() { return environment == null ? "production" : environment; }

    /** {@code …/v1/accounts/{account}/tabs/bundle} for the preferred languages, platform and app version. */
    URL bundleURL() throws TabClientException {
        StringBuilder query = new StringBuilder();
        for (String language : preferredLanguages) query.append(query.length() == 0 ? '?' : '&').append("locale=").append(encode(language));
        if (platform != null) query.append(query.length() == 0 ? '?' : '&').append("platform=").append(encode(platform));
        if (appVersion != null) query.append(query.length() == 0 ? '?' : '&').append("appVersion=").append(encode(appVersion));
        return url("/tabs/bundle" + query);
    }

    private URL url(String tail) throws TabClientException {
        String base = server.endsWith("/") ? server.substring(0, server.length() - 1) : server;
        try {
            return new URL(base + "/v1/accounts/" + encode(account) + tail);
        } catch (MalformedURLException e) {
            throw new TabClientException(TabClientException.Kind.TRANSPORT, "not a URL: " + server);
        }
    }

    private static String encode(String text) {
        try {
            return URLEncoder.encode(text, "UTF-8").replace("+", "%20");
        } catch (UnsupportedEncodingException e) {
            throw new AssertionError(e);
        }
    }

    /** {@code fr-FR, fr;q=0.9, en;q=0.8}: q falls by 0.1, down to 0.1; the first ten languages. */
    String acceptLanguage() {
        if (preferredLanguages.isEmpty()) return null;
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < Math.min(10, preferredLanguages.size()); i++) {
            if (i > 0) text.append(", ");
            text.append(preferredLanguages.get(i));
            if (i > 0) text.append(";q=0.").append(Math.max(1, 10 - i));
        }
        return text.toString();
    }
}
