package io.tabserver.tabclient;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import java.util.TimeZone;

import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The reports waiting to be sent, in a small file kept across launches ({@code <account>.tabs.reports.json}, or
 * {@code <account>@<environment>.tabs.reports.json}), as TabClient (Swift) writes it:
 * {@code {"lastSent":t,"notBefore":t,"rendered":[versions],"reports":[…]}}, written with {@link AtomicFile} at each change.
 * Bounded: at most {@link #CAPACITY} reports (the oldest dropped), reasons cut to 200 characters, {@code rendered} once per
 * version (the versions reported are kept, the newest 32), and a report older than 7 days is dropped: a few KiB at most.
 * Sent in batches at most once a minute ({@link #INTERVAL_MILLIS}), never before a {@code Retry-After} the server gave.
 */
final class ReportQueue {
    static final int CAPACITY = 20;
    static final long MAXIMUM_AGE_MILLIS = 7L * 24 * 3600 * 1000;
    static final long INTERVAL_MILLIS = 60000;

    /** The queue's file, or null (memory only). */
    private final File file;
    private final List<Report> reports = new ArrayList<Report>();
    private final List<Integer> rendered = new ArrayList<Integer>();
    private Long notBefore;
    private Long lastSent;

    ReportQueue(File directory, String account, String environment) {
        file = directory == null ? null : new File(directory, (environment == null ? account : account + "@" + environment) + ".tabs.reports.json");
        if (file == null) return;
        try {
            byte[] bytes = AtomicFile.read(file);
            if (bytes == null) return;
            JSONObject document = new JSONObject(new String(bytes, CompiledLayout.UTF8));
            JSONArray list = document.optJSONArray("reports");
            for (int i = 0; list != null && i < list.length(); i++) {
                JSONObject item = list.getJSONObject(i);
                reports.add(new Report(item.getInt("version"), item.getString("kind"), item.isNull("tab") ? null : item.optString("tab", null),
                        item.isNull("reason") ? null : item.optString("reason", null), item.getString("at")));
            }
            JSONArray versions = document.optJSONArray("rendered");
            for (int i = 0; versions != null && i < versions.length(); i++) rendered.add(versions.getInt(i));
            notBefore = document.has("notBefore") ? Rfc3339.millis(document.getString("notBefore")) : null;
            lastSent = document.has("lastSent") ? Rfc3339.millis(document.getString("lastSent")) : null;
        } catch (IOException e) {
            reports.clear();
        } catch (JSONException e) {
            reports.clear();
        }
    }

    /** What the queue holds now. */
    synchronized List<Report> reports() { return Collections.unmodifiableList(new ArrayList<Report>(reports)); }

    /** Queues {@code report} (unless a {@code rendered} of a version already reported, or the same one waits). Returns whether it was queued. */
    synchronized boolean add(Report report, long now) {
        expire(now);
        if (report.kind.equals("rendered")) {
            if (rendered.contains(report.version)) return false;
            rendered.add(report.version);
            while (rendered.size() > LaunchGuard.LIMIT) rendered.remove(0);
        }
        for (Report waiting : reports) {
            if (waiting.same(report)) return false;
        }
        reports.add(report);
        while (reports.size() > CAPACITY) reports.remove(0);
        write();
        return true;
    }

    /** The reports to send now (at most 50), or null: none, too soon after the last batch (unless {@code force}), or before {@code Retry-After}. */
    synchronized List<Report> batch(long now, boolean force) {
        expire(now);
        if (reports.isEmpty()) return null;
        if (notBefore != null && now < notBefore) return null;
        if (!force && lastSent != null && now - lastSent < INTERVAL_MILLIS) return null;
        return new ArrayList<Report>(reports.subList(0, Math.min(50, reports.size())));
    }

    /** The server took {@code sent} (or refused them for good): they leave the queue. */
    synchronized void sent(List<Report> sent, long now) {
        reports.removeAll(sent);
        lastSent = now;
        notBefore = null;
        write();
    }

    /** Kept (429/503 until {@code until}, or 5xx and no network: {@code until} null) for the next batch. */
    synchronized void keep(Long until, long now) {
        lastSent = now;
        notBefore = until;
        write();
    }

    private void expire(long now) {
        for (int i = reports.size() - 1; i >= 0; i--) {
            Long at = Rfc3339.millis(reports.get(i).at);
            if (at == null || now - at > MAXIMUM_AGE_MILLIS) reports.remove(i);
        }
    }

    private void write() {
        if (file == null) return;
        try {
            JSONObject document = new JSONObject();
            if (lastSent != null) document.put("lastSent", format(lastSent));
            if (notBefore != null) document.put("notBefore", format(notBefore));
            if (!rendered.isEmpty()) document.put("rendered", new JSONArray(rendered));
            JSONArray list = new JSONArray();
            for (Report report : reports) list.put(item(report));
            document.put("reports", list);
            AtomicFile.write(file, document.toString().getBytes(CompiledLayout.UTF8));
        } catch (IOException e) {
            // Kept in memory for this run.
        } catch (JSONException e) {
            // Not reached: only numbers and strings.
        }
    }

    static JSONObject item(Report report) throws JSONException {
        JSONObject item = new JSONObject().put("version", report.version).put("kind", report.kind).put("at", report.at);
        if (report.tab != null) item.put("tab", report.tab);
        if (report.reason != null) item.put("reason", report.reason);
        return item;
    }

    /** {@code millis} as RFC 3339 in UTC with milliseconds ({@code 2026-11-26T21:00:00.000Z}); no java.time below API 26. */
    static String format(long millis) {
        SimpleDateFormat format = new SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", Locale.ROOT);
        format.setTimeZone(TimeZone.getTimeZone("UTC"));
        return format.format(new Date(millis));
    }

    /** What a {@code POST …/tabs/reports} answered: its status and {@code Retry-After} in milliseconds (-1: none); status -1: no answer. */
    static final class Posted {
        final int status;
        final long retryAfterMillis;

        Posted(int status, long retryAfterMillis) {
            this.status = status;
            this.retryAfterMillis = retryAfterMillis;
        }
    }

    /** Posts {@code body} to {@code url} with a deadline (connect and read: {@code timeoutMillis}); never follows a redirect. */
    static Posted post(URL url, byte[] body, String environment, int timeoutMillis) {
        HttpURLConnection connection = null;
        try {
            connection = (HttpURLConnection) url.openConnection();
            connection.setInstanceFollowRedirects(false);
            connection.setUseCaches(false);
            connection.setConnectTimeout(timeoutMillis);
            connection.setReadTimeout(timeoutMillis);
            connection.setRequestMethod("POST");
            connection.setDoOutput(true);
            connection.setFixedLengthStreamingMode(body.length);
            connection.setRequestProperty("Content-Type", "application/json");
            if (environment != null) connection.setRequestProperty("Tabs-Environment", environment);
            OutputStream out = connection.getOutputStream();
            out.write(body);
            out.close();
            int status = connection.getResponseCode();
            long retryAfter = -1;
            String header = connection.getHeaderField("Retry-After");
            if (header != null) {
                try {
                    retryAfter = Long.parseLong(header.trim()) * 1000;
                } catch (NumberFormatException e) {
                    retryAfter = -1;
                }
            }
            InputStream in = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
            if (in != null) {
                byte[] skip = new byte[1024];
                for (int read = 0, total = 0; (read = in.read(skip)) > 0 && total < 16384; total += read) {
                    // The answer's counts are not used.
                }
                in.close();
            }
            return new Posted(status, retryAfter);
        } catch (IOException e) {
            return new Posted(-1, -1);
        } finally {
            if (connection != null) connection.disconnect();
        }
    }
}
