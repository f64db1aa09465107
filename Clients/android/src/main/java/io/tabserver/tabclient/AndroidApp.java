package io.tabserver.tabclient;

/**
 * What the library reads of the Android app it runs in, by reflection (it is compiled without the Android SDK, and
 * runs on any JVM, where every answer is null).
 */
final class AndroidApp {
    private AndroidApp() {}

    /** How many times {@link #versionName()} looked (tests prove an app that gives its version costs no reflection). */
    static final java.util.concurrent.atomic.AtomicInteger versionLookups = new java.util.concurrent.atomic.AtomicInteger();

    /** The app's {@code versionName}: {@code ActivityThread.currentApplication()}'s package info; null off Android. */
    static String versionName() {
        versionLookups.incrementAndGet();
        try {
            Object application = Class.forName("android.app.ActivityThread").getMethod("currentApplication").invoke(null);
            if (application == null) return null;
            Object packages = application.getClass().getMethod("getPackageManager").invoke(application);
            Object name = application.getClass().getMethod("getPackageName").invoke(application);
            Object info = packages.getClass().getMethod("getPackageInfo", String.class, int.class).invoke(packages, name, 0);
            Object version = info.getClass().getField("versionName").get(info);
            return version instanceof String ? (String) version : null;
        } catch (Throwable notAndroid) {
            return null;
        }
    }

    /** {@code LocaleList.getDefault().toLanguageTags()} ({@code fr-FR,en-US}); null off Android. */
    static String localeTags() {
        try {
            Class<?> list = Class.forName("android.os.LocaleList");
            Object locales = list.getMethod("getDefault").invoke(null);
            Object tags = list.getMethod("toLanguageTags").invoke(locales);
            return tags instanceof String ? (String) tags : null;
        } catch (Throwable notAndroid) {
            return null;
        }
    }
}
