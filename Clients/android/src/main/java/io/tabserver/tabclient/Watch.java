package io.tabserver.tabclient;

import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;

/**
 * {@code java -jar tabclient.jar URL --account A --locale L}: prints an account's tab bar as text, and again each time
 * the server changes it (long-poll), as {@code tabs-watch} does. It sends its install id (kept in {@code --cache} when
 * given), so it follows rollouts.
 */
public final class Watch {
    private Watch() {}

    static final String USAGE = "usage: java -jar tabclient.jar URL [--account A] [--locale L]... [--platform P] [--app-version V]\n"
            + "                                    [--environment E] [--install-id ID] [--bundle FILE] [--cache DIR] [--wait SECONDS]";

    public static void main(String[] arguments) throws Exception {
        String server = null;
        String account = "default";
        List<String> locales = new ArrayList<String>();
        String platform = "android";
        String appVersion = null;
        String environment = null;
        String installId = null;
        String bundleFile = null;
        String cache = null;
        int wait = 50;
        try {
            for (int i = 0; i < arguments.length; i++) {
                String argument = arguments[i];
                if (argument.equals("-h") || argument.equals("--help")) {
                    System.out.println(USAGE);
                    return;
                } else if (argument.startsWith("--")) {
                    if (i + 1 >= arguments.length) throw new IllegalArgumentException(argument + " needs a value");
                    String value = arguments[++i];
                    if (argument.equals("--account")) account = value;
                    else if (argument.equals("--locale")) locales.add(value);
                    else if (argument.equals("--platform")) platform = value;
                    else if (argument.equals("--app-version")) appVersion = value;
                    else if (argument.equals("--environment")) environment = value;
                    else if (argument.equals("--install-id")) installId = value;
                    else if (argument.equals("--bundle")) bundleFile = value;
                    else if (argument.equals("--cache")) cache = value;
                    else if (argument.equals("--wait")) wait = Integer.parseInt(value);
                    else throw new IllegalArgumentException("unknown option " + argument);
                } else if (server == null) {
                    server = argument;
                } else {
                    throw new IllegalArgumentException("unexpected argument " + argument);
                }
            }
            if (server == null || !(server.startsWith("http://") || server.startsWith("https://"))) {
                throw new IllegalArgumentException("the first argument is the server's http(s) URL");
            }
            if (wait < 1 || wait > 3600) throw new IllegalArgumentException("--wait is 1 to 3600 seconds");
        } catch (IllegalArgumentException e) {
            report(e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        // UTF-8 whatever the locale says (the bar has · and ⋯), flushed at each print.
        final PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        TabClientConfig.Builder builder = TabClientConfig.builder(server, account).platform(platform).environment(environment)
                .installId(installId).longPollWaitSeconds(wait).onEvent(new TabClient.EventListener() {
                    @Override
                    public void onEvent(TabClientEvent event) {
                        switch (event.kind) {
                            case FAILED:
                                report(event.error.getMessage()
                                        + (event.retryInMillis >= 0 ? String.format("; retrying in %.1f s", event.retryInMillis / 1000.0) : "")
                                        + "; showing " + event.shown);
                                break;
                            case CACHE_IGNORED:
                                report("ignored the cache file: " + event.error.getMessage() + "; showing " + event.shown);
                                break;
                            case DROPPED_OLDER:
                                report("dropped " + event.layout + ", older than " + event.shown);
                                break;
                            case REVERTED:
                                System.err.println("tabclient: reverted version " + event.version + " (" + event.reason + "), blocked it; showing "
                                        + event.shown);
                                break;
                            case BLOCKED:
                                System.err.println("tabclient: blocked " + event.layout + " (blocked or revoked); showing " + event.shown);
                                break;
                            case REVOKED:
                                System.err.println("tabclient: version " + event.version + " revoked; showing " + event.shown);
                                break;
                            default:
                                break;
                        }
                    }
                });
        if (!locales.isEmpty()) builder.preferredLanguages(locales);
        if (appVersion != null) builder.appVersion(appVersion);
        if (cache != null) builder.cacheDirectory(new File(cache));
        TabClientConfig configuration = builder.build();
        final TabClient client;
        try {
            client = new TabClient(configuration, startingBundle(configuration, bundleFile));
        } catch (TabClientException e) {
            report(e.getMessage());
            System.exit(1);
            return;
        }
        // Revalidate once before the first print, so that its header says whether the server agrees.
        try {
            client.refresh();
        } catch (TabClientException reported) {
            // Reported by onEvent; the bundled or cached layout is printed.
        }
        out.print(render(client.current(), client.validators().isEmpty() ? null : client.validators().get(0), client.source(), new Date()));
        out.flush();
        // Printed is rendered, for a watcher: the launch guard must not undo what it showed.
        client.markRendered();
        Executor printer = Executors.newSingleThreadExecutor();
        client.addListener(new TabClient.Listener() {
            @Override
            public void onLayout(CompiledLayout layout, TabClient.Source source) {
                out.print(render(layout, client.validators().isEmpty() ? null : client.validators().get(0), source, new Date()));
                out.flush();
                client.markRendered();
            }
        }, printer);
        client.start();
        Thread.currentThread().join();
    }

    /**
     * A line on standard error (standard output carries the tab bars only), capped and escaped: the client's errors quote
     * a few hundred bytes of an answer, and an ETag or a layout name in a line stays within a kilobyte too.
     */
    static void report(String line) { System.err.println("tabclient: " + Strings.capped(line, 1000)); }

    /** {@code --bundle FILE}, else {@code …/tabs/bundle} from the server, retried with backoff until it answers. */
    private static LayoutBundle startingBundle(TabClientConfig configuration, String file) throws TabClientException {
        if (file != null) {
            try {
                return LayoutBundle.read(new FileInputStream(file));
            } catch (IOException e) {
                throw new TabClientException(TabClientException.Kind.INVALID_BUNDLE, "cannot read " + file + ": " + e.getMessage());
            }
        }
        long delay = 1000;
        while (true) {
            try {
                return TabClient.downloadBundle(configuration);
            } catch (TabClientException e) {
                if (e.kind() == TabClientException.Kind.UNEXPECTED_STATUS && e.status() >= 400 && e.status() < 500) {
                    throw new TabClientException(e.kind(), "the server refused " + configuration.account + "'s bundle: " + e.getMessage());
                }
                if (e.kind() == TabClientException.Kind.INVALID_ENVIRONMENT) throw e;
                report(e.getMessage() + String.format("; retrying in %.0f s", delay / 1000.0));
                try {
                    Thread.sleep(delay);
                } catch (InterruptedException interrupted) {
                    throw new TabClientException(TabClientException.Kind.CANCELLED, "cancelled");
                }
                delay = Math.min(delay * 2, 30000);
            }
        }
    }

    /**
     * A layout as text, as {@code tabs-watch} prints it: a header, the bar (the initial tab between {@code *}, badges in
     * brackets, More with its count), and one line per navigation list (More's tabs, a tab's children).
     */
    static String render(CompiledLayout layout, String etag, TabClient.Source source, Date now) {
        StringBuilder header = new StringBuilder(layout.layout);
        if (layout.version != null) header.append(" v").append(layout.version);
        header.append(" · ").append(layout.locale).append(" · ").append(source.name().toLowerCase(java.util.Locale.ROOT));
        if (etag != null) header.append(" · ETag ").append(etag);
        header.append(" · ").append(new SimpleDateFormat("HH:mm:ss", java.util.Locale.ROOT).format(now));
        List<String> items = new ArrayList<String>();
        for (CompiledLayout.Tab tab : layout.tabs) items.add(item(tab, tab.tag != null && tab.tag == layout.initialIndex));
        StringBuilder text = new StringBuilder(header).append('\n');
        if (layout.more != null) {
            boolean selected = false;
            for (CompiledLayout.Tab tab : layout.more.tabs) selected |= tab.tag != null && tab.tag == layout.initialIndex;
            String more = layout.more.title + " ⋯" + layout.more.tabs.size();
            items.add(selected ? "*" + more + "*" : more);
        }
        text.append("| ").append(Strings.join(" | ", items)).append(" |\n");
        if (layout.more != null) {
            List<String> behind = new ArrayList<String>();
            for (CompiledLayout.Tab tab : layout.more.tabs) behind.add(item(tab, tab.tag != null && tab.tag == layout.initialIndex));
            text.append("  ").append(layout.more.title).append(" ▸ ").append(Strings.join(", ", behind)).append('\n');
        }
        for (CompiledLayout.Tab tab : layout.allTabs()) {
            if (tab.children.isEmpty()) continue;
            List<String> children = new ArrayList<String>();
            for (CompiledLayout.Tab child : tab.children) children.add(item(child, false));
            text.append("  ").append(tab.title).append(" ▸ ").append(Strings.join(", ", children)).append('\n');
        }
        return text.toString();
    }

    private static String item(CompiledLayout.Tab tab, boolean selected) {
        String text = tab.badge == null ? tab.title : tab.title + " [" + tab.badge + "]";
        return selected ? "*" + text + "*" : text;
    }
}
