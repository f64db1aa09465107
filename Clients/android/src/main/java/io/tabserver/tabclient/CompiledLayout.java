package io.tabserver.tabclient;

import java.nio.charset.Charset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.json.JSONArray;
import org.json.JSONObject;

/**
 * A compiled layout as the server sends it (docs/layout-format.md): what one client shows, already localized and targeted.
 * Made only by {@link #parse(String)}, which validates: a value of this type has tabs, unique ids, tags in order,
 * an initial index that exists, a height a bar can have and colours in {@code #RRGGBB(AA)}. Keys this version does not
 * know ({@code x-…} and newer ones) are in {@link #json()}.
 */
public final class CompiledLayout {
    static final Charset UTF8 = Charset.forName("UTF-8");

    /** The account whose layout this was compiled from ({@code default} for accounts without their own). */
    public final String layout;
    /** The stored version of that layout, or null when the server has none. */
    public final Integer version;
    /** The locale the titles are in. */
    public final String locale;
    /** The tag of the tab selected at launch. */
    public final int initialIndex;
    /** The tabs on the bar, in order (More's not included: see {@link #more}). */
    public final List<Tab> tabs;
    /** The tabs that did not fit on the bar, behind a "More" tab; null when all fit. */
    public final More more;
    public final Appearance appearance;
    private final JSONObject json;

    /** What a tab and the "More" tab both show: a title and images. */
    public abstract static class Item {
        /** The title, localized. */
        public final String title;
        /** The localization key the title came from, or null. */
        public final String titleKey;
        /** An image asset name (a drawable's name on Android, an SF Symbol or asset on iOS), or null. */
        public final String image;
        public final String selectedImage;

        Item(JSONObject json, String pointer) throws Json.Invalid {
            title = Json.string(json, "title", pointer, true);
            titleKey = Json.string(json, "titleKey", pointer, false);
            image = Json.string(json, "image", pointer, false);
            selectedImage = Json.string(json, "selectedImage", pointer, false);
        }
    }

    /** One tab of the bar, of More, or a child in a tab's navigation list. */
    public static final class Tab extends Item {
        /** Stable identity, unique in the layout. */
        public final String id;
        /** The index among the client's tabs (More's continue the count); null for children. */
        public final Integer tag;
        /** The screen to start ({@code HomeViewController}; an app maps it to a Fragment or Activity). */
        public final String rootViewController;
        /** Wrap the screen in a navigation stack. */
        public final boolean navigation;
        /** What tapping the selected tab again does: {@code popToRoot}, {@code none}, or a value a newer server knows. */
        public final String reselect;
        public final String badge;
        /** Handed to the screen when it starts, or null. */
        public final JSONObject params;
        /** A navigation list under this tab; empty when none. */
        public final List<Tab> children;
        public final JSONObject json;

        /** What TalkBack reads for the tab (localized), or null: its title. */
        public String accessibilityLabel() { return Colors.text(json, "accessibilityLabel"); }

        /** The key the label came from, when one was used. */
        public String accessibilityLabelKey() { return Colors.text(json, "accessibilityLabelKey"); }

        /** TalkBack's hint for the tab (localized), or null. */
        public String accessibilityHint() { return Colors.text(json, "accessibilityHint"); }

        public String accessibilityHintKey() { return Colors.text(json, "accessibilityHintKey"); }

        /** {@code search} for the layout's search destination, else null. */
        public String role() { return Colors.text(json, "role"); }

        Tab(JSONObject json, String pointer) throws Json.Invalid {
            super(json, pointer);
            this.json = json;
            id = Json.string(json, "id", pointer, true);
            tag = Json.integer(json, "tag", pointer);
            rootViewController = Json.string(json, "rootViewController", pointer, true);
            Boolean wrap = Json.bool(json, "navigation", pointer);
            navigation = wrap == null || wrap;
            String again = Json.string(json, "reselect", pointer, false);
            reselect = again == null ? "popToRoot" : again;
            badge = Json.string(json, "badge", pointer, false);
            params = Json.object(json, "params", pointer, false);
            children = tabs(Json.array(json, "children", pointer, false), pointer + "/children");
        }
    }

    /** The "More" tab and the tabs behind it. */
    public static final class More extends Item {
        public final List<Tab> tabs;

        More(JSONObject json, String pointer) throws Json.Invalid {
            super(json, pointer);
            tabs = tabs(Json.array(json, "tabs", pointer, true), pointer + "/tabs");
        }
    }

    /** How the bar looks. */
    public static final class Appearance {
        /** Points, 30–120 (49 is UIKit's; Android's bottom navigation is 56 dp). */
        public final double height;
        /** {@code #RRGGBB} or {@code #RRGGBBAA} (note: Android's {@code Color.parseColor} wants {@code #AARRGGBB}). */
        public final String backgroundColor;
        public final String tintColor;
        public final String unselectedTintColor;
        /** The selection animation's name: {@code none}, {@code underline}, {@code bounce}, {@code fade} or {@code x-…}. */
        public final String animator;
        public final JSONObject animatorParams;
        /** The colours used in dark mode as written ({@code appearance.dark}), or null. */
        public final Colors dark;

        /** The colours for {@code scheme}: in DARK {@link #dark}'s, a colour it leaves out keeping its light value. */
        public Colors getColors(Scheme scheme) {
            Colors light = new Colors(backgroundColor, tintColor, unselectedTintColor);
            return scheme == Scheme.DARK ? Colors.over(dark, light) : light;
        }

        Appearance(JSONObject json, String pointer) throws Json.Invalid {
            dark = Colors.dark(json);
            Double points = Json.number(json, "height", pointer);
            height = points == null ? 49 : points;
            backgroundColor = Json.string(json, "backgroundColor", pointer, false);
            tintColor = Json.string(json, "tintColor", pointer, false);
            unselectedTintColor = Json.string(json, "unselectedTintColor", pointer, false);
            JSONObject animation = Json.object(json, "animator", pointer, false);
            animator = animation == null ? "none" : Json.string(animation, "name", pointer + "/animator", true);
            animatorParams = animation == null ? null : Json.object(animation, "params", pointer + "/animator", false);
        }
    }

    private CompiledLayout(JSONObject json) throws Json.Invalid {
        this.json = json;
        layout = Json.string(json, "layout", "", true);
        version = Json.integer(json, "version", "");
        locale = Json.string(json, "locale", "", true);
        Integer initial = Json.integer(json, "initialIndex", "");
        initialIndex = initial == null ? 0 : initial;
        tabs = tabs(Json.array(json, "tabs", "", true), "/tabs");
        JSONObject overflow = Json.object(json, "more", "", false);
        more = overflow == null ? null : new More(overflow, "/more");
        appearance = new Appearance(Json.object(json, "appearance", "", true), "/appearance");
    }

    static List<Tab> tabs(JSONArray array, String pointer) throws Json.Invalid {
        if (array == null) return Collections.emptyList();
        List<Tab> tabs = new ArrayList<Tab>(array.length());
        for (int i = 0; i < array.length(); i++) tabs.add(new Tab(Json.objectAt(array, i, pointer), pointer + "/" + i));
        return Collections.unmodifiableList(tabs);
    }

    /** Decodes a compiled layout (a {@code …/tabs} body) and validates it. */
    public static CompiledLayout parse(String text) throws TabClientException {
        try {
            return of(Json.parseObject(text));
        } catch (Json.Invalid e) {
            throw TabClientException.invalidLayout(Collections.singletonList(e.getMessage()));
        }
    }

    static CompiledLayout parse(byte[] body) throws TabClientException { return parse(new String(body, UTF8)); }

    /** Reads and validates an already parsed layout object. */
    static CompiledLayout of(JSONObject json) throws TabClientException {
        CompiledLayout layout;
        try {
            layout = new CompiledLayout(json);
        } catch (Json.Invalid e) {
            throw TabClientException.invalidLayout(Collections.singletonList(e.getMessage()));
        }
        List<String> problems = layout.problems();
        if (!problems.isEmpty()) throw TabClientException.invalidLayout(problems);
        return layout;
    }

    /** The sidebar's {@code groups} (tablets, the navigation rail), in order; empty when the layout has none. */
    public List<TabGroup> groups() { return TabGroup.of(json); }

    /** The document as it arrived (unknown keys included). Do not change it. */
    public JSONObject json() { return json; }

    /** Every tab the client gets, in tag order: the bar's, then those under More. */
    public List<Tab> allTabs() {
        List<Tab> all = new ArrayList<Tab>(tabs);
        if (more != null) all.addAll(more.tabs);
        return all;
    }

    /** The initially selected tab. */
    public Tab initialTab() {
        for (Tab tab : allTabs()) {
            if (tab.tag != null && tab.tag == initialIndex) return tab;
        }
        return null;
    }

    /** What a tab bar needs, as TabClient (Swift) checks it; empty when valid. */
    private List<String> problems() {
        final List<String> problems = new ArrayList<String>();
        if (tabs.isEmpty()) problems.add("/tabs: a layout needs at least one tab on the bar");
        Set<String> seen = new HashSet<String>();
        for (int i = 0; i < tabs.size(); i++) check(tabs.get(i), "/tabs/" + i, i, seen, problems);
        if (more != null) {
            if (more.tabs.isEmpty()) problems.add("/more/tabs: More has no tabs");
            for (int i = 0; i < more.tabs.size(); i++) check(more.tabs.get(i), "/more/tabs/" + i, tabs.size() + i, seen, problems);
        }
        int count = tabs.size() + (more == null ? 0 : more.tabs.size());
        if (initialIndex < 0 || initialIndex >= Math.max(count, 1)) {
            problems.add("/initialIndex: " + initialIndex + " is not the tag of a tab (" + count + " tabs)");
        }
        double height = appearance.height;
        if (Double.isNaN(height) || Double.isInfinite(height) || height < 30 || height > 120) {
            problems.add("/appearance/height: " + height + " is not a height of 30 to 120 points");
        }
        colour("backgroundColor", appearance.backgroundColor, problems);
        colour("tintColor", appearance.tintColor, problems);
        colour("unselectedTintColor", appearance.unselectedTintColor, problems);
        return problems;
    }

    private static void check(Tab tab, String pointer, Integer expected, Set<String> seen, List<String> problems) {
        if (tab.id.isEmpty()) problems.add(pointer + "/id: the id is empty");
        if (!seen.add(tab.id)) problems.add(pointer + "/id: the id '" + tab.id + "' is used twice");
        if (expected == null ? tab.tag != null : !expected.equals(tab.tag)) {
            problems.add(pointer + "/tag: the tag is " + (tab.tag == null ? "missing" : tab.tag.toString()) + ", expected "
                    + (expected == null ? "none (a child)" : expected.toString()));
        }
        if (tab.rootViewController.isEmpty()) problems.add(pointer + "/rootViewController: the view controller class is empty");
        for (int i = 0; i < tab.children.size(); i++) check(tab.children.get(i), pointer + "/children/" + i, null, seen, problems);
    }

    private static void colour(String name, String value, List<String> problems) {
        if (value != null && !isColour(value)) problems.add("/appearance/" + name + ": '" + value + "' is not #RRGGBB or #RRGGBBAA");
    }

    static boolean isColour(String text) {
        if (!(text.length() == 7 || text.length() == 9) || text.charAt(0) != '#') return false;
        for (int i = 1; i < text.length(); i++) {
            char c = text.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'))) return false;
        }
        return true;
    }

    /** The same document (key order and 1 vs 1.0 aside). */
    @Override
    public boolean equals(Object other) {
        return other instanceof CompiledLayout && Json.same(json, ((CompiledLayout) other).json);
    }

    @Override
    public int hashCode() { return layout.hashCode() * 31 + (version == null ? 0 : version); }

    @Override
    public String toString() { return layout + " v" + (version == null ? "?" : version.toString()) + " (" + locale + ")"; }
}
