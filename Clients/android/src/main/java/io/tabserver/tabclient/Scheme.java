package io.tabserver.tabclient;

/** The colour scheme the device is in (Android: {@code Configuration.UI_MODE_NIGHT_YES} is DARK). */
public enum Scheme {
    LIGHT,
    DARK
}
