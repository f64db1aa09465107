package io.tabserver.tabclient;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONObject;

/** A section of the sidebar tablets and the navigation rail show: its title and its tabs' ids. Phones ignore it. */
public final class TabGroup {
    public final String id;
    public final String title;
    public final List<String> tabs;

    TabGroup(String id, String title, List<String> tabs) {
        this.id = id;
        this.title = title;
        this.tabs = Collections.unmodifiableList(tabs);
    }

    /** A layout's {@code groups}, in order (empty when it has none; an entry without an id is skipped). */
    static List<TabGroup> of(JSONObject layout) {
        JSONArray groups = layout == null ? null : layout.optJSONArray("groups");
        List<TabGroup> list = new ArrayList<TabGroup>();
        for (int i = 0; groups != null && i < groups.length(); i++) {
            JSONObject group = groups.optJSONObject(i);
            String id = Colors.text(group, "id");
            if (id == null) continue;
            List<String> tabs = new ArrayList<String>();
            JSONArray ids = group.optJSONArray("tabs");
            for (int j = 0; ids != null && j < ids.length(); j++) {
                if (ids.opt(j) instanceof String) tabs.add((String) ids.opt(j));
            }
            String title = Colors.text(group, "title");
            list.add(new TabGroup(id, title == null ? "" : title, tabs));
        }
        return Collections.unmodifiableList(list);
    }
}
