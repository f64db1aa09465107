package io.tabserver.tabclient;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;
import org.json.JSONArray;
import org.json.JSONObject;

/**
 * The {@code …/tabs/bundle} document (docs/client.md, "Add the package and ship today's layout") an app ships (in {@code res/raw} or {@code assets}), the same file an iOS
 * app ships as {@code Tabs.bundle.json}: one compiled layout per locale (and platform and app version) with its ETags,
 * so that the first launch needs no network and the first request is a {@code 304}.
 */
public final class LayoutBundle {
    public final String account;
    /** When the server made it (RFC 3339), or null. */
    public final String generatedAt;
    public final List<Representation> representations;

    /** One compiled variant of the layout and the ETags the server gives it. */
    public static final class Representation {
        public final String locale;
        public final String platform;
        public final String appVersion;
        /** The ETag of the uncompressed representation. */
        public final String etag;
        /** Every ETag of this representation ({@code etag}, then one per content coding by coding name), for {@code If-None-Match}. */
        public final List<String> validators;
        public final CompiledLayout layout;
        /**
         * The exact bytes of {@link #layout} as the server signed them (base64), with the signature's key id and value: a
         * server with {@code --signing-key} gives them; null otherwise. With pinned keys the layout shown is the one these
         * bytes hold, and only when they verify.
         */
        final String signedBody;
        final String keyId;
        final String sig;

        Representation(JSONObject json, String pointer) throws Json.Invalid, TabClientException {
            locale = Json.string(json, "locale", pointer, true);
            platform = Json.string(json, "platform", pointer, false);
            appVersion = Json.string(json, "appVersion", pointer, false);
            etag = Json.string(json, "etag", pointer, true);
            List<String> tags = new ArrayList<String>();
            tags.add(etag);
            JSONObject codings = Json.object(json, "etags", pointer, false);
            if (codings != null) {
                TreeMap<String, String> sorted = new TreeMap<String, String>();
                for (String coding : Json.keys(codings)) sorted.put(coding, Json.string(codings, coding, pointer + "/etags", true));
                for (String tag : sorted.values()) {
                    if (!tags.contains(tag)) tags.add(tag);
                }
            }
            validators = Collections.unmodifiableList(tags);
            JSONObject signed = Json.object(json, "signed", pointer, false);
            signedBody = signed == null ? null : Json.string(signed, "body", pointer + "/signed", true);
            keyId = signed == null ? null : Json.string(signed, "keyid", pointer + "/signed", true);
            sig = signed == null ? null : Json.string(signed, "sig", pointer + "/signed", true);
            try {
                layout = CompiledLayout.of(Json.object(json, "layout", pointer, true));
            } catch (TabClientException e) {
                throw new TabClientException(TabClientException.Kind.INVALID_BUNDLE, "invalid bundle: " + pointer + "/layout: " + e.getMessage());
            }
        }
    }

    private LayoutBundle(JSONObject json) throws Json.Invalid, TabClientException {
        account = Json.string(json, "account", "", true);
        generatedAt = Json.string(json, "generatedAt", "", false);
        JSONArray array = Json.array(json, "representations", "", true);
        List<Representation> list = new ArrayList<Representation>();
        for (int i = 0; i < array.length(); i++) list.add(new Representation(Json.objectAt(array, i, "/representations"), "/representations/" + i));
        if (list.isEmpty()) throw new TabClientException(TabClientException.Kind.INVALID_BUNDLE, "invalid bundle: it has no representations");
        representations = Collections.unmodifiableList(list);
    }

    /** Decodes a bundle and validates every layout in it. */
    public static LayoutBundle parse(String text) throws TabClientException {
        try {
            return new LayoutBundle(Json.parseObject(text));
        } catch (Json.Invalid e) {
            throw new TabClientException(TabClientException.Kind.INVALID_BUNDLE, "invalid bundle: " + e.getMessage());
        }
    }

    /** Reads (and closes) a bundle: {@code LayoutBundle.read(context.getResources().openRawResource(R.raw.tabs_bundle))}. */
    public static LayoutBundle read(InputStream input) throws TabClientException {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            byte[] chunk = new byte[16384];
            for (int n; (n = input.read(chunk)) > 0;) bytes.write(chunk, 0, n);
            return parse(new String(bytes.toByteArray(), CompiledLayout.UTF8));
        } catch (IOException e) {
            throw new TabClientException(TabClientException.Kind.INVALID_BUNDLE, "invalid bundle: cannot read it: " + e.getMessage());
        } finally {
            try {
                input.close();
            } catch (IOException ignored) {
                // Read already; nothing to keep.
            }
        }
    }

    /**
     * The representation for a client: the platform and app version it says (or ones made for any), then the first of
     * its preferred languages the bundle has (exactly, then by language: {@code fr-CA} → {@code fr}), else the first.
     */
    public Representation representation(List<String> preferredLanguages, String platform, String appVersion) {
        List<Representation> targeted = new ArrayList<Representation>();
        List<Representation> exact = new ArrayList<Representation>();
        for (Representation r : representations) {
            if ((r.platform == null || r.platform.equals(platform)) && (r.appVersion == null || r.appVersion.equals(appVersion))) {
                targeted.add(r);
            }
            if (same(r.platform, platform) && same(r.appVersion, appVersion)) exact.add(r);
        }
        List<Representation> candidates = !exact.isEmpty() ? exact : !targeted.isEmpty() ? targeted : representations;
        for (String language : preferredLanguages) {
            for (Representation r : candidates) {
                if (r.locale.equalsIgnoreCase(language)) return r;
            }
            String base = language(language);
            for (Representation r : candidates) {
                if (language(r.locale).equals(base)) return r;
            }
        }
        return candidates.get(0);
    }

    private static boolean same(String a, String b) { return a == null ? b == null : a.equals(b); }

    static String language(String locale) {
        int end = 0;
        while (end < locale.length() && locale.charAt(end) != '-' && locale.charAt(end) != '_') end++;
        return locale.substring(0, end).toLowerCase(Locale.ROOT);
    }
}
