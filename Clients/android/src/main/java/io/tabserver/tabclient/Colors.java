package io.tabserver.tabclient;

import org.json.JSONObject;

/** The bar's colours for one scheme: upper-case {@code #RRGGBB}/{@code #RRGGBBAA}, or null (the platform's). */
public final class Colors {
    public final String backgroundColor;
    public final String tintColor;
    public final String unselectedTintColor;

    public Colors(String backgroundColor, String tintColor, String unselectedTintColor) {
        this.backgroundColor = backgroundColor;
        this.tintColor = tintColor;
        this.unselectedTintColor = unselectedTintColor;
    }

    /** {@code appearance.dark} as written, or null when the layout has none. */
    static Colors dark(JSONObject appearance) {
        JSONObject dark = appearance == null ? null : appearance.optJSONObject("dark");
        if (dark == null) return null;
        return new Colors(text(dark, "backgroundColor"), text(dark, "tintColor"), text(dark, "unselectedTintColor"));
    }

    /** {@code light} where {@code dark} (may be null) is silent. */
    static Colors over(Colors dark, Colors light) {
        if (dark == null) return light;
        return new Colors(dark.backgroundColor != null ? dark.backgroundColor : light.backgroundColor,
                dark.tintColor != null ? dark.tintColor : light.tintColor,
                dark.unselectedTintColor != null ? dark.unselectedTintColor : light.unselectedTintColor);
    }

    /** A string member, or null (absent, or not a string). */
    static String text(JSONObject object, String name) {
        Object value = object == null ? null : object.opt(name);
        return value instanceof String ? (String) value : null;
    }
}
