package io.tabserver.tabclient;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;
import org.json.JSONObject;

/**
 * What an app build has (docs/builds.md): the screens ({@code rootViewController} names) and images a layout may
 * name. An app's test makes it and writes {@link #body()}, the body of {@code PUT /v1/builds/{platform}/{appVersion}}
 * that CI sends before the build ships (docs/android.md, "Declaring a build"), as TabClient's {@code BuildManifest}.
 */
public final class BuildManifest {
    public final String platform;
    public final String appVersion;
    public final List<String> viewControllers;
    /** The image names a layout may use, or null (none declared: the server checks no images). */
    public final List<String> images;
    public final String note;

    public BuildManifest(String platform, String appVersion, Collection<String> viewControllers, Collection<String> images, String note) {
        this.platform = platform;
        this.appVersion = appVersion;
        this.viewControllers = new ArrayList<String>(new TreeSet<String>(viewControllers));
        this.images = images == null ? null : new ArrayList<String>(new TreeSet<String>(images));
        this.note = note;
    }

    /** {@code /v1/builds/{platform}/{appVersion}}, where the body goes. */
    public String path() { return "/v1/builds/" + platform + "/" + appVersion; }

    /** {@code {"images"?:[…],"note"?:…,"viewControllers":[…]}}: keys and names sorted, names unique (the same build, the same bytes). */
    public String body() {
        StringBuilder text = new StringBuilder("{");
        if (images != null) text.append("\"images\":").append(array(images)).append(',');
        if (note != null) text.append("\"note\":").append(JSONObject.quote(note)).append(',');
        return text.append("\"viewControllers\":").append(array(viewControllers)).append('}').toString();
    }

    private static String array(List<String> names) {
        StringBuilder text = new StringBuilder("[");
        for (int i = 0; i < names.size(); i++) text.append(i == 0 ? "" : ",").append(JSONObject.quote(names.get(i)));
        return text.append(']').toString();
    }
}
