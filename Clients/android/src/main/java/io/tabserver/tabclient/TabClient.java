package io.tabserver.tabclient;

import java.io.File;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;

import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * Keeps an app's tab bar layout, as TabClient (Swift) does: shows the last good one at once (the disk's, else the
 * bundled one), revalidates it with the server ({@code If-None-Match}), stores what the server sends (atomically), and
 * follows changes by long-poll.
 *
 * <pre>{@code
 * TabClient client = new TabClient(config, LayoutBundle.read(resources.openRawResource(R.raw.tabs_bundle)));
 * show(client.current());                                   // at launch: never blocks, never empty
 * client.addListener((layout, source) -> show(layout), ContextCompat.getMainExecutor(context));
 * client.start();                                           // long-poll until stop()
 * }</pre>
 */
public final class TabClient {
    /** Where the layout {@link #current()} returns came from. */
    public enum Source {
        /** The layout bundled with the app (first launch, or the cache was unusable). */
        BUNDLE,
        /** The last good layout stored on disk by an earlier run. */
        CACHE,
        /** The server, during this run. */
        SERVER
    }

    /** Told about each new layout (different from the one before), on the executor it was added with. */
    public interface Listener {
        void onLayout(CompiledLayout layout, Source source);
    }

    /** Told about every request's outcome, on the client's own threads (see {@link TabClientEvent}). */
    public interface EventListener {
        void onEvent(TabClientEvent event);
    }

    private static final class State {
        final CompiledLayout layout;
        /** Sent as {@code If-None-Match}: the ETags of {@link #layout} (a bundled one has one per content coding). */
        final List<String> validators;
        final Source source;
        /** The ETag in the cache file (null: no file, or none read or written yet). */
        final String stored;
        /** Whether {@link #layout} came in an answer whose {@code Vary} named {@code X-Install-Id}. */
        final boolean perInstall;
        /**
         * Manifest mode: the highest manifest revision seen (kept in the cache file), its ETag, and the newest manifest
         * followed in this run (its choice is made again at each answer, by the device's clock).
         */
        final Long revision;
        final String manifestEtag;
        final Manifest manifest;
        /** Manifest mode: the candidate a coming step gives this install, prefetched and not shown yet, or null. */
        final Pending pending;

        State(CompiledLayout layout, List<String> validators, Source source, String stored, boolean perInstall) {
            this(layout, validators, source, stored, perInstall, null, null, null, null);
        }

        State(CompiledLayout layout, List<String> validators, Source source, String stored, boolean perInstall, Long revision,
                String manifestEtag, Manifest manifest, Pending pending) {
            this.layout = layout;
            this.validators = Collections.unmodifiableList(new ArrayList<String>(validators));
            this.source = source;
            this.stored = stored;
            this.perInstall = perInstall;
            this.revision = revision;
            this.manifestEtag = manifestEtag;
            this.manifest = manifest;
            this.pending = pending;
        }

        /** This state with another layout (the manifest's fields kept). */
        State with(CompiledLayout layout, List<String> validators, Source source, String stored, boolean perInstall) {
            return new State(layout, validators, source, stored, perInstall, revision, manifestEtag, manifest, pending);
        }

        /** This state following {@code followed} (its revision and ETag). */
        State following(Manifest followed, String etag) {
            return new State(layout, validators, source, stored, perInstall, followed.revision, etag, followed, pending);
        }

        /** This state with another prefetched candidate (or none). */
        State withPending(Pending candidate) {
            return new State(layout, validators, source, stored, perInstall, revision, manifestEtag, manifest, candidate);
        }

        /** What the long-poll compares to see whether an answer changed anything. */
        List<String> progress() {
            List<String> all = new ArrayList<String>(validators);
            if (manifestEtag != null) all.add(manifestEtag);
            return all;
        }

        LayoutReference reference() {
            return new LayoutReference(layout.layout, layout.version, validators.isEmpty() ? null : validators.get(0), source);
        }
    }

    /**
     * A rollout's candidate fetched ahead of the step that gives it to this install (manifest mode), kept in the prefetch
     * file until {@link #atMillis}, when it becomes {@link #current()}. Compared by identity: a change makes a new one.
     */
    private static final class Pending {
        final CompiledLayout layout;
        /** The answer's bytes (UTF-8 JSON, as text), to store them again exactly, and their {@code {keyid, sig}} or null. */
        final String body;
        final String etag;
        final String[] signature;
        /** The step's time, and as the manifest wrote it. */
        final long atMillis;
        final String at;
        /** The newest manifest that scheduled it. */
        final long revision;
        /** SERVER when fetched in this run, CACHE when read from the prefetch file at launch. */
        final Source source;

        Pending(CompiledLayout layout, String body, String etag, String[] signature, long atMillis, String at, long revision, Source source) {
            this.layout = layout;
            this.body = body;
            this.etag = etag;
            this.signature = signature;
            this.atMillis = atMillis;
            this.at = at;
            this.revision = revision;
            this.source = source;
        }

        /** The same candidate at another step's time, scheduled by the manifest {@code newer}. */
        Pending rescheduled(long newAtMillis, String newAt, long newer) {
            return new Pending(layout, body, etag, signature, newAtMillis, newAt, newer, source);
        }

        LayoutReference reference() { return new LayoutReference(layout.layout, layout.version, etag, source); }
    }

    private static final class Registered {
        final Listener listener;
        final Executor executor;

        Registered(Listener listener, Executor executor) {
            this.listener = listener;
            this.executor = executor;
        }
    }

    private final TabClientConfig configuration;
    private final String installId;
    private final LayoutCache cache;
    /** Manifest mode: the file of the prefetched candidate (null without a cache directory). */
    private final LayoutCache prefetchCache;
    private volatile State state;
    /** Serializes "store, then publish": two answers arriving together cannot publish out of order. */
    private final Object storing = new Object();
    private final CopyOnWriteArrayList<Registered> listeners = new CopyOnWriteArrayList<Registered>();
    private final Random jitter = new Random();
    private Poller poller;
    /** The bundled layout: the floor the launch guard and a revocation go back to. */
    private final State floor;
    /** The launch guard (with {@code storing} held): when the layout shown began to wait for {@link #markRendered()} (-1: not pending). */
    private volatile long pendingSince = -1;
    /** The last layout that rendered, to go back to when the pending one never does (null: the bundle). */
    private State fallback;
    /** The guard's record without a cache directory (with one, the cache file's: {@link LayoutCache#record}). */
    private volatile LaunchGuard memoryRecord = LaunchGuard.EMPTY;
    /** The wait for {@code readyTimeout} in this run, or null. */
    private Thread readyTimer;
    /** The reports waiting to be sent (null: reports are off). */
    private final ReportQueue reportQueue;
    /** One batch at a time. */
    private final Object sendingReports = new Object();

    /**
     * Makes a client whose {@link #current()} is, at once, the last good layout on disk (of its environment), else the
     * bundled one. Reads two small files (the layout and the install id; the id's is written on first use); makes no
     * request.
     *
     * @throws TabClientException INVALID_ENVIRONMENT, INVALID_INSTALL_ID or INVALID_APP_VERSION for a configuration
     *     that cannot be sent; INVALID_SIGNATURE when keys are pinned, the bundled layout does not verify and no verified
     *     cached layout is there either (an app never starts on a layout its keys refuse)
     */
    public TabClient(TabClientConfig configuration, LayoutBundle bundle) throws TabClientException {
        configuration.validate();
        this.configuration = configuration;
        reportQueue = configuration.reports ? new ReportQueue(configuration.cacheDirectory, configuration.account, configuration.environment) : null;
        LayoutBundle.Representation bundled =
                bundle.representation(configuration.preferredLanguages, configuration.platform, configuration.appVersion);
        State initial = new State(bundled.layout, bundled.validators, Source.BUNDLE, null, false);
        // With pinned keys the bundled layout is the one its signed bytes hold, and only when they verify.
        TabClientException bundleRefused = null;
        if (configuration.signingKeys != null) {
            try {
                if (bundled.signedBody == null) throw SigningKeys.signature("the bundled layout is not signed");
                byte[] body = SigningKeys.Codec.decode(bundled.signedBody);
                if (body == null) throw SigningKeys.signature("the bundled layout's signed body is not base64");
                configuration.signingKeys.verify(bundled.keyId, bundled.sig, "layout", configuration.account,
                        configuration.signatureEnvironment(), body);
                initial = new State(CompiledLayout.parse(body), bundled.validators, Source.BUNDLE, null, false);
            } catch (TabClientException e) {
                bundleRefused = SigningKeys.refused("bundle", e);
            }
        }
        boolean cached = false;
        floor = initial;
        Integer launchReverted = null;
        boolean switchedAtLaunch = false;
        TabClientException installIdNotStored = null;
        File directory = configuration.cacheDirectory;
        if (configuration.installId != null) {
            installId = configuration.installId;
        } else if (directory != null) {
            InstallId.Resolution resolution = InstallId.resolve(directory);
            installId = resolution.id;
            installIdNotStored = resolution.notStored;
        } else {
            installId = InstallId.random();
        }
        if (directory != null) {
            cache = new LayoutCache(directory, configuration.account, configuration.environment);
            cache.removeLeftovers();
            LaunchGuard launchRecord = cache.loadGuard();
            cache.record = launchRecord;
            String launchPrevious = LaunchGuard.previous(cache);
            cache.previous = launchPrevious;
            try {
                LayoutCache.Entry entry = cache.load(configuration.signingKeys != null);
                if (entry != null && launchRecord.refuses(entry.layout.version)) {
                    // A blocked or revoked version left in the file (a crash between two writes): never shown.
                    entry = null;
                    storeGuardQuietly(launchRecord, true);
                }
                if (entry != null && configuration.signingKeys != null) {
                    try {
                        configuration.signingKeys.verify(entry.keyId, entry.sig, "layout", configuration.account,
                                configuration.signatureEnvironment(), entry.signedBody == null ? new byte[0] : entry.signedBody);
                    } catch (TabClientException e) {
                        throw SigningKeys.refused("cache file", e);
                    }
                }
                if (entry != null) {
                    // An app update may ship a newer layout than an old cache holds.
                    boolean bundleIsNewer = bundleRefused == null && entry.layout.layout.equals(initial.layout.layout)
                            && version(initial.layout) > version(entry.layout);
                    cached = !bundleIsNewer;
                    initial = bundleIsNewer ? new State(initial.layout, initial.validators, Source.BUNDLE, entry.etag, false, entry.revision, null, null, null)
                            : new State(entry.layout, Collections.singletonList(entry.etag), Source.CACHE, entry.etag, entry.perInstall,
                                    entry.revision, null, null, null);
                }
            } catch (TabClientException unusable) {
                emit(new TabClientEvent(TabClientEvent.Kind.CACHE_IGNORED, initial.reference(), null, unusable, -1, null, false));
                cache.remove();
            }
            prefetchCache = new LayoutCache(directory, configuration.account, configuration.environment, true);
            prefetchCache.removeLeftovers();
            if (configuration.manifestMode) {
                Pending pending = null;
                try {
                    pending = pending(prefetchCache.loadPrefetched(), configuration);
                } catch (TabClientException unusable) {
                    emit(new TabClientEvent(TabClientEvent.Kind.CACHE_IGNORED, initial.reference(), null, unusable, -1, null, false));
                    prefetchCache.remove();
                }
                if (pending != null && launchRecord.refuses(pending.layout.version)) {
                    prefetchCache.remove();
                    pending = null;
                }
                long revision = pending == null ? 0 : initial.revision == null ? pending.revision : Math.max(initial.revision, pending.revision);
                if (pending == null) {
                    // Nothing prefetched.
                } else if (initial.revision != null && (pending.revision < initial.revision || pending.etag.equals(initial.stored))) {
                    // Scheduled by an older manifest than the one that chose the layout stored, or already stored.
                    prefetchCache.remove();
                } else if (pending.atMillis > configuration.clock.currentTimeMillis()) {
                    initial = new State(initial.layout, initial.validators, initial.source, initial.stored, initial.perInstall, revision, null,
                            null, pending);
                } else {
                    // Its step came while the app was not running: shown at once, offline too.
                    prefetchCache.remove();
                    if (initial.layout.layout.equals(pending.layout.layout) && initial.layout.version != null && pending.layout.version != null
                            && pending.layout.version < initial.layout.version) {
                        emit(new TabClientEvent(TabClientEvent.Kind.DROPPED_OLDER, initial.reference(), pending.reference(), null, -1, null, false));
                    } else {
                        // Newly shown by a switch: pending, with the layout that rendered kept to go back to.
                        boolean guarded = configuration.launchAttempts > 0 && pending.layout.version != null
                                && !(pending.layout.layout.equals(floor.layout.layout) && pending.layout.version.equals(floor.layout.version));
                        boolean rendered = guarded && initial.source == Source.CACHE && launchRecord.pending == null;
                        State before = initial;
                        if (guarded) {
                            cache.previous = rendered ? LaunchGuard.strip(LaunchGuard.text(cache)) : null;
                            cache.record = cache.record.withPending(pending.layout.version, 1);
                            switchedAtLaunch = true;
                            pendingSince = configuration.clock.currentTimeMillis();
                            fallback = rendered ? before : null;
                        }
                        String stored = initial.stored;
                        try {
                            cache.store(pending.body.getBytes(CompiledLayout.UTF8), pending.etag, false,
                                    configuration.signingKeys == null ? null : pending.signature, revision);
                            stored = pending.etag;
                        } catch (TabClientException e) {
                            emit(new TabClientEvent(TabClientEvent.Kind.FAILED, pending.reference(), null, e, -1, null, false));
                        }
                        initial = new State(pending.layout, Collections.singletonList(pending.etag), Source.CACHE, stored, false, revision, null,
                                null, null);
                        cached = true;
                    }
                }
            } else {
                prefetchCache.remove();
            }
            if (initial.source == Source.CACHE && !switchedAtLaunch) {
                LaunchGuard.Verdict verdict = LaunchGuard.atLaunch(launchRecord, initial.layout.version, floor.layout.version,
                        configuration.launchAttempts);
                if (verdict != null) {
                    cache.record = verdict.record;
                    if (verdict.revert == null) storeGuardQuietly(verdict.record, false);
                    if (verdict.revert == null) {
                        // One more launch that may end before the app says the layout rendered.
                        pendingSince = configuration.clock.currentTimeMillis();
                    } else {
                        cache.previous = null;
                        initial = initial.with(floor.layout, floor.validators, Source.BUNDLE, null, false);
                        // Back to the last layout that rendered when the file kept it (and it still verifies), else the bundle.
                        LayoutCache.Entry back = null;
                        if (launchPrevious != null && LaunchGuard.restore(cache, launchPrevious, verdict.record)) {
                            try {
                                back = cache.load(configuration.signingKeys != null);
                                if (back != null && configuration.signingKeys != null) {
                                    configuration.signingKeys.verify(back.keyId, back.sig, "layout", configuration.account,
                                            configuration.signatureEnvironment(), back.signedBody == null ? new byte[0] : back.signedBody);
                                }
                            } catch (TabClientException e) {
                                back = null;
                            }
                        }
                        if (back != null && !verdict.record.refuses(back.layout.version)) {
                            initial = initial.with(back.layout, Collections.singletonList(back.etag), Source.CACHE, back.etag, back.perInstall);
                        } else {
                            storeGuardQuietly(verdict.record, true);
                        }
                        launchReverted = verdict.revert;
                    }
                }
            }
        } else {
            cache = null;
            prefetchCache = null;
        }
        state = initial;
        if (launchReverted != null) {
            queueReport(launchReverted, "reverted", null, "launchAttempts");
            emit(TabClientEvent.reverted(launchReverted, "launchAttempts", initial.reference()));
        }
        if (pendingSince >= 0) startReadyTimer();
        if (bundleRefused != null) {
            if (!cached) throw bundleRefused;
            emitFailure(bundleRefused, -1);
        }
        if (installIdNotStored != null) emitFailure(installIdNotStored, -1);
    }

    private static int version(CompiledLayout layout) { return layout.version == null ? 0 : layout.version; }

    /** A prefetch file's candidate (null for none), when keys are pinned only if its signature verifies. */
    private static Pending pending(LayoutCache.Prefetched entry, TabClientConfig configuration) throws TabClientException {
        if (entry == null) return null;
        byte[] body = entry.body.getBytes(CompiledLayout.UTF8);
        if (configuration.signingKeys != null) {
            try {
                if (entry.keyId == null || entry.sig == null) throw SigningKeys.signature("the prefetched candidate is not signed");
                configuration.signingKeys.verify(entry.keyId, entry.sig, "layout", configuration.account, configuration.signatureEnvironment(), body);
            } catch (TabClientException e) {
                throw SigningKeys.refused("prefetch file", e);
            }
        }
        CompiledLayout layout = CompiledLayout.parse(body);
        Long at = Rfc3339.millis(entry.at);
        if (at == null) throw TabClientException.invalidLayout(Collections.singletonList("prefetch file: /at: " + entry.at + " is not an RFC 3339 time"));
        return new Pending(layout, entry.body, entry.etag, entry.keyId == null || entry.sig == null ? null : new String[] {entry.keyId, entry.sig},
                at, entry.at, entry.revision, Source.CACHE);
    }

    /** {@code bytes} as text when they are UTF-8, else null. */
    private static String utf8(byte[] bytes) {
        try {
            return CompiledLayout.UTF8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /** The layout to show now: the newest valid one this client has (server, else disk, else bundle). Never blocks. */
    public CompiledLayout current() { return state.layout; }

    /** Where {@link #current()} came from. */
    public Source source() { return state.source; }

    /** The ETags sent as {@code If-None-Match} with the next request. */
    public List<String> validators() { return state.validators; }

    /** {@link #current()}'s name, version, ETag and source. */
    public LayoutReference reference() { return state.reference(); }

    /**
     * The id sent as {@code X-Install-Id}: the configuration's, else the random one kept in the cache directory. Give
     * it to whoever reproduces a rollout's buckets ({@link Bucket#of}); it identifies nothing but this install.
     */
    public String installId() { return installId; }

    public TabClientConfig configuration() { return configuration; }

    /** Calls {@code listener} on {@code executor} with each new layout (the app's main thread: {@code ContextCompat.getMainExecutor(context)}). */
    public void addListener(Listener listener, Executor executor) { listeners.add(new Registered(listener, executor)); }

    public void removeListener(Listener listener) {
        for (Registered registered : listeners) {
            if (registered.listener == listener) listeners.remove(registered);
        }
    }

    /**
     * Manifest mode: when {@link #current()} next changes with no request, in milliseconds since 1970 by the configuration's
     * {@link TabClientConfig#clock}: the time of the coming step that gives this install a rollout's candidate, once the
     * candidate is prefetched; -1 when none is waiting. {@link #start()} switches at that time by itself; an app that only
     * calls {@link #refresh()} can schedule a call to {@link #switchIfDue()} for it.
     */
    public long nextSwitchMillis() {
        Pending pending = state.pending;
        return pending == null ? -1 : pending.atMillis;
    }

    /**
     * Manifest mode: when the time of {@link #nextSwitchMillis()} has come by the device's clock, makes the prefetched
     * candidate {@link #current()}, stores it in the cache file and reports it (UPDATED, and the listeners), with no
     * request: offline too. Returns it, or null when nothing was due. A candidate older than the version of its layout
     * shown now is dropped instead (DROPPED_OLDER): an older version never replaces a newer one. Never blocks on the network.
     */
    public CompiledLayout switchIfDue() {
        Pending pending = state.pending;
        if (pending == null || pending.atMillis > configuration.clock.currentTimeMillis()) return null;
        RefreshOutcome outcome = promote(pending, false);
        return outcome != null && outcome.kind == RefreshOutcome.Kind.UPDATED ? outcome.layout : null;
    }

    /**
     * Asks the server once whether {@link #current()} is still its layout; on {@code 200} validates, stores and
     * publishes the new layout. On any failure {@link #current()} stays as it was. Blocks: not on the main thread. In
     * manifest mode a prefetched candidate whose step's time has come is switched to first ({@link #switchIfDue()}, no
     * request): the outcome is then UPDATED with it unless the server's answer changes more.
     */
    public RefreshOutcome refresh() throws TabClientException {
        checkReady();
        CompiledLayout switched = switchIfDue();
        try {
            RefreshOutcome outcome = fetch(null, null);
            if (switched != null && (outcome.kind == RefreshOutcome.Kind.NOT_MODIFIED || outcome.kind == RefreshOutcome.Kind.UNCHANGED)) {
                return new RefreshOutcome(RefreshOutcome.Kind.UPDATED, switched, null, null);
            }
            return outcome;
        } catch (TabClientException e) {
            emitFailure(e, -1);
            throw e;
        }
    }

    /**
     * Follows the server's changes on a thread of the client's own until {@link #stop()}: long-polls with the current
     * ETag, retries failures with exponential backoff and jitter, never sooner than {@code Retry-After}. Listeners hear
     * of each new layout. Does nothing while already started.
     */
    public synchronized void start() {
        if (poller != null && !poller.stopped) return;
        poller = new Poller();
        Thread thread = new Thread(poller, "tabclient-" + configuration.account);
        thread.setDaemon(true);
        poller.thread = thread;
        thread.start();
    }

    /** Stops following: closes the request in flight and ends the polling thread; returns at once. */
    public synchronized void stop() {
        if (poller == null) return;
        poller.stop();
        poller = null;
    }

    /** Whether {@link #start()} is in effect. */
    public synchronized boolean isStarted() { return poller != null; }

    /**
     * The long-poll loop of {@link #start()}. In manifest mode a timer thread waits for {@link #nextSwitchMillis()} by the
     * device's clock while a poll is held or a backoff runs; then the request in flight is cancelled (or the pause cut
     * short) and the loop switches to the prefetched candidate, with no request.
     */
    private final class Poller implements Runnable {
        volatile boolean stopped;
        /** The switch timer of this round fired: the request in flight and the backoff give way. */
        volatile boolean woken;
        /** Counts rounds, so that a timer of an earlier round wakes nothing. */
        volatile int round;
        volatile Http.Call call;
        Thread thread;

        void stop() {
            stopped = true;
            Http.Call running = call;
            if (running != null) running.cancel();
            thread.interrupt();
        }

        /** The device's clock reached the next switch (a timer of round {@code of}). */
        void wake(int of) {
            if (of != round) return;
            woken = true;
            Http.Call running = call;
            if (running != null) running.cancel();
            synchronized (this) {
                notifyAll();
            }
        }

        /** Waits {@code millis}, less when stopped or woken. */
        private synchronized void pause(long millis) throws InterruptedException {
            long end = System.nanoTime() + millis * 1000000;
            for (long left; !stopped && !woken && (left = end - System.nanoTime()) > 0;) wait(Math.max(1, left / 1000000));
        }

        @Override
        public void run() {
            int wait = configuration.longPollWaitSeconds;
            // An answer sooner than this was not held.
            long tooSoon = Math.min(wait * 1000L / 2, 1000L);
            int failures = 0;
            while (!stopped) {
                round += 1;
                woken = false;
                // Manifest mode: a prefetched candidate whose step's time has come, with no request (offline too).
                if (switchIfDue() != null) failures = 0;
                if (stopped) return;
                Thread timer = switchTimer(this, round);
                try {
                    State before = state;
                    long started = System.nanoTime();
                    long delay = -1;
                    try {
                        RefreshOutcome outcome = fetch(wait, this);
                        // Queued reports go with the poll, at most once a minute.
                        flushReports();
                        boolean news = outcome.kind == RefreshOutcome.Kind.UPDATED || !state.layout.equals(before.layout);
                        if (news) {
                            failures = 0;
                        } else if ((System.nanoTime() - started) / 1000000 < tooSoon && state.progress().equals(before.progress())) {
                            // Nothing new, the ETag unchanged, and sooner than a held poll ends: the server did not hold it (no
                            // long-poll, stopping, or ignoring If-None-Match). Back off rather than ask again at once.
                            failures += 1;
                            delay = backoff(failures);
                        } else {
                            failures = 0;
                        }
                    } catch (TabClientException e) {
                        if (stopped) return;
                        if (woken) continue;
                        if (e.kind() == TabClientException.Kind.CANCELLED) return;
                        failures += 1;
                        delay = Math.max(backoff(failures), e.retryAfterMillis());
                        emitFailure(e, delay);
                    }
                    if (delay >= 0) {
                        try {
                            pause(delay);
                        } catch (InterruptedException e) {
                            if (stopped) return;
                        }
                    }
                } finally {
                    if (timer != null) timer.interrupt();
                }
            }
        }
    }

    /** A thread that wakes {@code poller}'s round {@code of} when the device's clock reaches {@link #nextSwitchMillis()}; null when none is due. */
    private Thread switchTimer(final Poller poller, final int of) {
        final long at = nextSwitchMillis();
        if (at < 0) return null;
        Thread timer = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    configuration.clock.sleepUntil(at);
                } catch (InterruptedException e) {
                    return;
                }
                poller.wake(of);
            }
        }, "tabclient-switch-" + configuration.account);
        timer.setDaemon(true);
        timer.start();
        return timer;
    }

    /** {@code initialBackoff · 2^(failures−1)}, at most {@code maximumBackoff}, less a random part of up to half. */
    long backoff(int failures) {
        int exponent = Math.min(Math.max(failures - 1, 0), 30);
        long full = Math.min(configuration.initialBackoffMillis << exponent, configuration.maximumBackoffMillis);
        double share;
        synchronized (jitter) {
            share = jitter.nextDouble() * 0.5;
        }
        return full - (long) (full * share);
    }

    /** The request headers every request of this client sends; {@code install} adds {@code X-Install-Id}. */
    private Map<String, String> headers(List<String> validators, boolean install) {
        Map<String, String> headers = new LinkedHashMap<String, String>();
        headers.put("Accept", "application/json");
        String languages = configuration.acceptLanguage();
        if (languages != null) headers.put("Accept-Language", languages);
        if (configuration.platform != null) headers.put("X-Client-Platform", configuration.platform);
        if (configuration.appVersion != null) headers.put("X-App-Version", configuration.appVersion);
        if (configuration.environment != null) headers.put("Tabs-Environment", configuration.environment);
        if (install && TabClientConfig.headerSafe(installId)) headers.put("X-Install-Id", installId);
        if (!validators.isEmpty()) headers.put("If-None-Match", Strings.join(", ", validators));
        return headers;
    }

    /** One exchange, cancellable by {@code poller}'s stop(), reported as REQUEST_SENT. */
    private Http.Answer exchange(URL url, Map<String, String> headers, Integer wait, Poller poller, State shown) throws TabClientException {
        int timeout = configuration.requestTimeoutMillis + (wait == null ? 0 : wait * 1000);
        Http.Call call = new Http.Call(url, headers, timeout);
        if (poller != null) {
            poller.call = call;
            if (poller.stopped || poller.woken) call.cancel();
        }
        emit(new TabClientEvent(TabClientEvent.Kind.REQUEST_SENT, shown.reference(), null, null, -1, url.toString(), wait != null));
        try {
            return call.run(timeout);
        } finally {
            if (poller != null) poller.call = null;
        }
    }

    /** With pinned keys, checks an answer's {@code Tabs-Signature} over its body ({@code kind}: layout or manifest). */
    private void verify(Http.Answer answer, String kind) throws TabClientException {
        if (configuration.signingKeys == null) return;
        configuration.signingKeys.verifyHeader(answer.header("Tabs-Signature"), kind, configuration.account,
                configuration.signatureEnvironment(), answer.body);
    }

    /** The answer's signature to keep in the cache file (with pinned keys only), or null. */
    private String[] kept(Http.Answer answer) {
        return configuration.signingKeys == null ? null : SigningKeys.parseHeader(answer.header("Tabs-Signature"));
    }

    /**
     * One request (two in manifest mode when the manifest changed); {@code wait} (seconds) makes it a long-poll. Whatever an
     * answer makes the reading throw (a RuntimeException of org.json, a StackOverflowError, an OutOfMemoryError) is a
     * fault like any other: reported, the last good layout kept, the poller alive.
     */
    RefreshOutcome fetch(Integer wait, Poller poller) throws TabClientException {
        try {
            return fetchOnce(wait, poller);
        } catch (TabClientException e) {
            throw e;
        } catch (RuntimeException | Error e) {
            throw unreadable(e);
        }
    }

    /** What reading an answer threw, beyond the faults the client names, as a TRANSPORT fault. */
    private static TabClientException unreadable(Throwable e) {
        return new TabClientException(TabClientException.Kind.TRANSPORT, "the answer could not be read: " + e);
    }

    private RefreshOutcome fetchOnce(Integer wait, Poller poller) throws TabClientException {
        if (configuration.manifestMode) return fetchByManifest(wait, poller);
        State shown = state;
        List<String> validators = shown.validators;
        Http.Answer answer = exchange(configuration.tabsURL(wait, installId), headers(validators, true), wait, poller, shown);
        return take(answer, validators, null, null);
    }

    /**
     * Whether a {@code 200} is one arm of a running rollout, read from its {@code Vary}: only with no keys pinned. With keys
     * pinned only signed content decides what is taken, and {@code Vary} is not signed: a pinned client follows a rollback
     * through manifest mode (the signed manifest chooses the version).
     */
    private boolean armByVary(Http.Answer answer) { return configuration.signingKeys == null && answer.variesByInstall(); }

    /** A {@code 304} for a request that sent no validators, or naming an ETag not among them, confirms nothing: a fault. */
    private static void unsolicited(Http.Answer answer, List<String> validators) throws TabClientException {
        String named = answer.header("ETag");
        if (validators.isEmpty() || (named != null && !Http.sentETag(named, validators))) {
            throw TabClientException.status(304, "a 304 for an ETag this client never sent", -1);
        }
    }

    /**
     * A {@code …/tabs} answer to a request that sent {@code validators}: {@code 304} confirms the layout shown, {@code 200}
     * is verified, parsed and published; {@code version}: the one asked for by number (manifest mode, with the manifest's
     * {@code revision}), or null; a {@code 410 Gone} to it says it is revoked.
     */
    private RefreshOutcome take(Http.Answer answer, List<String> validators, Integer version, Long revision) throws TabClientException {
        // Only a version asked for by number is gone for good: a plain …/tabs answering 410 is a fault like any other.
        if (answer.status == 410 && version != null) {
            LayoutReference shown = learnGone(version);
            return new RefreshOutcome(RefreshOutcome.Kind.REVOKED, null, new LayoutReference(shown.layout, version, null, Source.SERVER), shown);
        }
        if (answer.status == 200 || answer.status == 304) {
            List<Integer> revoked = LaunchGuard.revokedHeader(answer.header("Tabs-Revoked"));
            if (revoked != null) learnRevoked(revoked);
        }
        switch (answer.status) {
            case 304: {
                unsolicited(answer, validators);
                LayoutReference confirmed;
                synchronized (storing) {
                    State now = state;
                    if (now.validators.equals(validators)) {
                        // A 304 is not signed: it confirms the layout shown and changes nothing else (perInstall stays).
                        now = now.with(now.layout, now.validators, Source.SERVER, now.stored, now.perInstall);
                        state = now;
                    }
                    confirmed = now.reference();
                }
                emit(TabClientEvent.of(TabClientEvent.Kind.NOT_MODIFIED, confirmed));
                return new RefreshOutcome(RefreshOutcome.Kind.NOT_MODIFIED, null, null, null);
            }
            case 200: {
                String etag = answer.header("ETag");
                if (etag == null || etag.isEmpty()) {
                    throw new TabClientException(TabClientException.Kind.MISSING_ETAG, "the server answered 200 without an ETag");
                }
                CompiledLayout layout;
                try {
                    verify(answer, "layout");
                    layout = CompiledLayout.parse(answer.body);
                } catch (TabClientException e) {
                    noteRefused(answer.body, e);
                    throw e;
                }
                if (version != null && !version.equals(layout.version)) {
                    throw TabClientException.invalidLayout(Collections.singletonList(
                            "/version: " + layout.version + ", but version " + version + " was asked for"));
                }
                return publish(layout, answer.body, etag, armByVary(answer), kept(answer), revision);
            }
            default:
                throw TabClientException.status(answer.status, answer.problemDetail(), answer.retryAfterMillis());
        }
    }

    /**
     * Manifest mode: the manifest (long-polled with its ETag), then, when it chose a version other than the one shown (or
     * one not yet confirmed in this run), that version: the prefetched candidate when it is the one, else by number. A
     * manifest with a lower revision than one followed is ignored. No install id is sent: the answers are the same for
     * every install. The choice is made at the device clock's time (a step whose time has come counts), and when a coming
     * step will move this install, its candidate is prefetched (once; a failure is reported, not thrown, and tried again
     * at the next manifest answer).
     */
    private RefreshOutcome fetchByManifest(Integer wait, Poller poller) throws TabClientException {
        State shown = state;
        List<String> tags = shown.manifestEtag == null ? Collections.<String>emptyList() : Collections.singletonList(shown.manifestEtag);
        Http.Answer answer = exchange(configuration.manifestURL(wait), headers(tags, false), wait, poller, shown);
        if (answer.status == 200) {
            String etag = answer.header("ETag");
            if (etag == null || etag.isEmpty()) {
                throw new TabClientException(TabClientException.Kind.MISSING_ETAG, "the server answered 200 without an ETag");
            }
            verify(answer, "manifest");
            Manifest manifest = Manifest.parse(answer.body);
            Long keptRevision = null;
            synchronized (storing) {
                State now = state;
                if (now.revision != null && manifest.revision < now.revision) {
                    keptRevision = now.revision;
                } else {
                    state = now.following(manifest, etag);
                }
            }
            if (keptRevision != null) {
                emit(TabClientEvent.droppedOlderManifest(reference(), manifest.revision, keptRevision));
                return new RefreshOutcome(RefreshOutcome.Kind.DROPPED_OLDER_MANIFEST, null, null, null);
            }
        } else if (answer.status != 304) {
            throw TabClientException.status(answer.status, answer.problemDetail(), answer.retryAfterMillis());
        } else {
            unsolicited(answer, tags);
        }
        Manifest manifest = state.manifest;
        if (manifest == null) {
            throw new TabClientException(TabClientException.Kind.INVALID_MANIFEST, "invalid manifest: 304 for a manifest this client never had");
        }
        learnRevoked(manifest.revoked);
        long now = configuration.clock.currentTimeMillis();
        int chosen = manifest.versionFor(installId, now);
        Manifest.Move move = manifest.move(installId, now);
        Pending pending = reconcile(move, chosen, manifest.revision);
        State current = state;
        RefreshOutcome outcome = null;
        if (record().refuses(chosen)) {
            if (pending != null && version(pending.layout) == chosen) drop(pending);
            LayoutReference refused = new LayoutReference(current.layout.layout, chosen, null, Source.SERVER);
            emit(new TabClientEvent(TabClientEvent.Kind.BLOCKED, current.reference(), refused, null, -1, null, false));
            outcome = new RefreshOutcome(RefreshOutcome.Kind.BLOCKED, null, refused, current.reference());
        } else if (current.source == Source.SERVER && current.layout.version != null && current.layout.version.intValue() == chosen) {
            if (pending != null && version(pending.layout) == chosen) drop(pending);
            emit(TabClientEvent.of(TabClientEvent.Kind.NOT_MODIFIED, current.reference()));
            outcome = new RefreshOutcome(RefreshOutcome.Kind.NOT_MODIFIED, null, null, null);
        } else if (pending != null && version(pending.layout) == chosen) {
            outcome = promote(pending, true);
        }
        if (outcome == null) outcome = fetchVersion(chosen, manifest.revision, manifest.environment, poller);
        if (move != null) prefetch(move, manifest.revision, manifest.environment, poller);
        return outcome;
    }

    /**
     * Manifest mode: keeps the prefetched candidate only while the newest manifest ({@code revision}) still schedules it
     * for this install, with that step's time (the file written again when it moved), or chose it ({@code chosen},
     * promoted next); else drops it and its file: a rollback, a pause, another rollout. Returns the one kept.
     */
    private Pending reconcile(Manifest.Move move, int chosen, long revision) {
        Pending kept;
        TabClientException failure = null;
        synchronized (storing) {
            State now = state;
            Pending pending = now.pending;
            if (pending == null) return null;
            if (version(pending.layout) == chosen) return pending;
            if (move == null || move.version != version(pending.layout)) {
                dropLocked(pending);
                return null;
            }
            if (move.atMillis == pending.atMillis && move.at.equals(pending.at) && revision == pending.revision) return pending;
            kept = pending.rescheduled(move.atMillis, move.at, revision);
            if (prefetchCache != null) {
                try {
                    prefetchCache.storePrefetched(kept.body, kept.etag, kept.at, revision, signing(kept));
                } catch (TabClientException e) {
                    failure = e;
                }
            }
            state = now.withPending(kept);
        }
        if (failure != null) emitFailure(failure, -1);
        return kept;
    }

    /** The signature to keep with a candidate's bytes: with pinned keys only. */
    private String[] signing(Pending pending) { return configuration.signingKeys == null ? null : pending.signature; }

    /** Drops the prefetched candidate {@code pending} (and its file) when it is still the one kept. */
    private void drop(Pending pending) {
        synchronized (storing) {
            dropLocked(pending);
        }
    }

    /** {@link #drop} with {@code storing} held. */
    private void dropLocked(Pending pending) {
        State now = state;
        if (now.pending != pending) return;
        state = now.withPending(null);
        if (prefetchCache != null) prefetchCache.remove();
    }

    /**
     * Manifest mode: fetches the candidate {@code move} gives this install ({@code …/tabs?version=N}, no
     * {@code If-None-Match}: nothing of it is held), checks it as any answer (signature, layout, the version asked for)
     * and keeps it in the prefetch file with the step's time, not shown; unless one is kept already or a newer manifest
     * came meanwhile. Its request is a REQUEST_SENT event, a failure a FAILED one (not thrown), and what it kept is
     * {@link #nextSwitchMillis()}: no event kind of its own, as TabClient (whose apps switch over events exhaustively).
     */
    private void prefetch(Manifest.Move move, long revision, String environment, Poller poller) {
        State before = state;
        if (before.pending != null || before.revision == null || before.revision.longValue() != revision) return;
        if (record().refuses(move.version)) return;
        try {
            Http.Answer answer = exchange(configuration.tabsURL(move.version, environment), headers(Collections.<String>emptyList(), false), null, poller, before);
            if (answer.status == 410) {
                // Revoked since the manifest scheduled it: never prefetched, nor asked for again.
                learnGone(move.version);
                return;
            }
            if (answer.status != 200) throw TabClientException.status(answer.status, answer.problemDetail(), answer.retryAfterMillis());
            String etag = answer.header("ETag");
            if (etag == null || etag.isEmpty()) {
                throw new TabClientException(TabClientException.Kind.MISSING_ETAG, "the server answered 200 without an ETag");
            }
            verify(answer, "layout");
            CompiledLayout layout = CompiledLayout.parse(answer.body);
            String text = utf8(answer.body);
            if (text == null) throw TabClientException.invalidLayout(Collections.singletonList("not UTF-8"));
            if (layout.version == null || layout.version.intValue() != move.version) {
                throw TabClientException.invalidLayout(Collections.singletonList(
                        "/version: " + layout.version + ", but version " + move.version + " was asked for"));
            }
            Pending pending = new Pending(layout, text, etag, SigningKeys.parseHeader(answer.header("Tabs-Signature")), move.atMillis, move.at,
                    revision, Source.SERVER);
            TabClientException failure = null;
            synchronized (storing) {
                State now = state;
                if (now.pending == null && now.revision != null && now.revision.longValue() == revision) {
                    if (prefetchCache != null) {
                        try {
                            prefetchCache.storePrefetched(text, etag, move.at, revision, signing(pending));
                        } catch (TabClientException e) {
                            failure = e;
                        }
                    }
                    state = now.withPending(pending);
                }
            }
            if (failure != null) emitFailure(failure, -1);
        } catch (TabClientException e) {
            if (e.kind() == TabClientException.Kind.CANCELLED) return;
            emitFailure(e, -1);
        }
    }

    /**
     * Makes the prefetched {@code pending} current: stores it as the layout (then removes the prefetch file: a crash
     * between leaves both, and the next launch drops the candidate the layout's file already holds) and reports it. With
     * {@code takeLower} false (its step's time came), a newer version of the same layout shown stays and the candidate is
     * dropped; true when the newest manifest chose its version (a version fetched by number would be taken too). Null
     * when {@code pending} is no longer the candidate kept.
     */
    private RefreshOutcome promote(Pending pending, boolean takeLower) {
        RefreshOutcome outcome;
        TabClientEvent event;
        TabClientException failure = null;
        synchronized (storing) {
            State current = state;
            if (current.pending != pending) return null;
            if (record().refuses(pending.layout.version)) {
                dropLocked(pending);
                outcome = new RefreshOutcome(RefreshOutcome.Kind.BLOCKED, null, pending.reference(), current.reference());
                event = new TabClientEvent(TabClientEvent.Kind.BLOCKED, current.reference(), pending.reference(), null, -1, null, false);
            } else if (!takeLower && current.layout.layout.equals(pending.layout.layout) && current.layout.version != null
                    && pending.layout.version != null && pending.layout.version < current.layout.version) {
                dropLocked(pending);
                LayoutReference kept = current.reference();
                outcome = new RefreshOutcome(RefreshOutcome.Kind.DROPPED_OLDER, null, pending.reference(), kept);
                event = new TabClientEvent(TabClientEvent.Kind.DROPPED_OLDER, kept, pending.reference(), null, -1, null, false);
            } else {
                String stored = current.stored;
                long revision = current.revision == null ? pending.revision : Math.max(current.revision, pending.revision);
                State back = current.validators.contains(pending.etag) ? fallback : beginPending(pending.layout, current);
                if (cache != null && !pending.etag.equals(current.stored)) {
                    try {
                        cache.store(pending.body.getBytes(CompiledLayout.UTF8), pending.etag, false, signing(pending), revision);
                        stored = pending.etag;
                    } catch (TabClientException e) {
                        failure = e;
                    }
                }
                if (prefetchCache != null) prefetchCache.remove();
                if (current.validators.contains(pending.etag)) {
                    State now = current.with(current.layout, current.validators, current.source, stored, false).withPending(null);
                    state = now;
                    outcome = new RefreshOutcome(RefreshOutcome.Kind.UNCHANGED, null, null, null);
                    event = TabClientEvent.of(TabClientEvent.Kind.UNCHANGED, now.reference());
                } else {
                    state = current.with(pending.layout, Collections.singletonList(pending.etag), pending.source, stored, false).withPending(null);
                    fallback = back;
                    pendingSince = guarding(pending.layout) ? configuration.clock.currentTimeMillis() : -1;
                    startReadyTimer();
                    outcome = new RefreshOutcome(RefreshOutcome.Kind.UPDATED, pending.layout, null, null);
                    event = new TabClientEvent(TabClientEvent.Kind.UPDATED, current.reference(), pending.reference(), null, -1, null, false);
                    // Reported before the listeners hear of it (they may run at once, on this thread), and in order.
                    if (failure != null) emitFailure(failure, -1);
                    emit(event);
                    if (!pending.layout.equals(current.layout)) notifyListeners(pending.layout, pending.source);
                    return outcome;
                }
            }
        }
        if (failure != null) emitFailure(failure, -1);
        emit(event);
        return outcome;
    }

    /** Manifest mode: {@code …/tabs?version=N} with the ETags of the layout shown. */
    private RefreshOutcome fetchVersion(int version, Long revision, String environment, Poller poller) throws TabClientException {
        State shown = state;
        List<String> validators = shown.validators;
        Http.Answer answer = exchange(configuration.tabsURL(version, environment), headers(validators, false), null, poller, shown);
        return take(answer, validators, version, revision);
    }

    /**
     * Stores a validated layout, then makes it current (also when storing fails: it is valid, and newer). An answer with
     * a lower {@code version} of the layout shown, whatever its source, is dropped, except when the layout shown was one
     * arm of a rollout ({@code perInstall}) and the answer is not: the rollout ended, and a rollback gives the
     * candidate's installs the lower stable version. In manifest mode the newest manifest chose the version, and a lower
     * one is taken (a rollback). One carrying the ETag of the layout shown changes nothing; the cache file is written
     * only when its ETag differs.
     */
    private RefreshOutcome publish(CompiledLayout layout, byte[] body, String etag, boolean perInstall, String[] signature,
            Long revision) {
        LayoutReference arrived = new LayoutReference(layout.layout, layout.version, etag, Source.SERVER);
        RefreshOutcome outcome;
        TabClientEvent event;
        TabClientException failure = null;
        synchronized (storing) {
            State current = state;
            boolean rolledBack = current.perInstall && !perInstall || configuration.manifestMode;
            if (record().refuses(layout.version)) {
                LayoutReference kept = current.reference();
                outcome = new RefreshOutcome(RefreshOutcome.Kind.BLOCKED, null, arrived, kept);
                event = new TabClientEvent(TabClientEvent.Kind.BLOCKED, kept, arrived, null, -1, null, false);
            } else if (current.layout.layout.equals(layout.layout) && current.layout.version != null && layout.version != null
                    && layout.version < current.layout.version && !rolledBack) {
                LayoutReference kept = current.reference();
                outcome = new RefreshOutcome(RefreshOutcome.Kind.DROPPED_OLDER, null, arrived, kept);
                event = new TabClientEvent(TabClientEvent.Kind.DROPPED_OLDER, kept, arrived, null, -1, null, false);
            } else {
                String stored = current.stored;
                State back = current.validators.contains(etag) ? fallback : beginPending(layout, current);
                if (cache != null && !etag.equals(current.stored)) {
                    try {
                        cache.store(body, etag, perInstall, signature, revision);
                        stored = etag;
                    } catch (TabClientException e) {
                        failure = e;
                    }
                }
                if (current.validators.contains(etag)) {
                    State now = current.with(current.layout, current.validators, Source.SERVER, stored, perInstall);
                    state = now;
                    outcome = new RefreshOutcome(RefreshOutcome.Kind.UNCHANGED, null, null, null);
                    event = TabClientEvent.of(TabClientEvent.Kind.UNCHANGED, now.reference());
                } else {
                    state = current.with(layout, Collections.singletonList(etag), Source.SERVER, stored, perInstall);
                    fallback = back;
                    pendingSince = guarding(layout) ? configuration.clock.currentTimeMillis() : -1;
                    startReadyTimer();
                    outcome = new RefreshOutcome(RefreshOutcome.Kind.UPDATED, layout, null, null);
                    event = new TabClientEvent(TabClientEvent.Kind.UPDATED, current.reference(), arrived, null, -1, null, false);
                    // Reported before the listeners hear of it (they may run at once, on this thread), and in order.
                    if (failure != null) emitFailure(failure, -1);
                    emit(event);
                    if (!layout.equals(current.layout)) notifyListeners(layout, Source.SERVER);
                    return outcome;
                }
            }
        }
        if (failure != null) emitFailure(failure, -1);
        emit(event);
        return outcome;
    }

    // The launch guard (LaunchGuard): undoes on the phone a layout that breaks the app before it can reach the network
    // again, and drops the versions the server revokes.

    /**
     * Tells the client that {@link #current()} is on screen: the first frame of the selected destination was drawn (on iOS:
     * the initial tab's root view controller appeared). Until then a layout newly shown from the network, a prefetch or a
     * switch is pending: {@code launchAttempts} launches in a row that end before this call, or {@code readyTimeout} in one
     * run, send the client back to the last layout that rendered (else the bundle) and block that version. Call it once
     * the bar is drawn, from any thread; again is harmless. Never before the bar is on screen, nor from a crash handler.
     */
    public void markRendered() {
        Integer shown = state.layout.version;
        if (shown != null) queueReport(shown, "rendered", null, null);
        synchronized (storing) {
            stopReadyTimer();
            pendingSince = -1;
            fallback = null;
            LaunchGuard record = record();
            if (record.pending == null) return;
            LaunchGuard next = record.withPending(null, null);
            setRecord(next);
            storeGuardQuietly(next, false);
        }
    }

    /** What the end of the app's process does to this client (tests that relaunch): no more polls, no ready timer. */
    void endRun() {
        stop();
        synchronized (storing) {
            stopReadyTimer();
            pendingSince = -1;
        }
    }

    /** Whether {@link #current()} waits for {@link #markRendered()}. */
    public boolean isPendingRender() { return pendingSince >= 0; }

    /** The versions the launch guard blocked (oldest first, at most 32), kept in the cache file. */
    public List<Integer> blockedVersions() { return record().blocked; }

    /** The versions the server said are revoked (its newest list). */
    public List<Integer> revokedVersions() { return record().revoked; }

    private LaunchGuard record() { return cache != null ? cache.record : memoryRecord; }

    private void setRecord(LaunchGuard next) {
        if (cache != null) cache.record = next;
        else memoryRecord = next;
    }

    /** Writes the record into the cache file; a failure is reported, not thrown (the guard then holds it for this run). */
    private void storeGuardQuietly(LaunchGuard record, boolean dropLayout) {
        if (cache == null) return;
        try {
            LaunchGuard.store(cache, record, dropLayout);
        } catch (TabClientException e) {
            emit(new TabClientEvent(TabClientEvent.Kind.FAILED, state == null ? null : state.reference(), null, e, -1, null, false));
        }
    }

    /** Whether the guard watches {@code layout} when newly shown: it is on, and {@code layout} is not the bundle's version. */
    private boolean guarding(CompiledLayout layout) {
        if ((configuration.launchAttempts <= 0 && configuration.readyTimeoutMillis <= 0) || layout.version == null) return false;
        return !(layout.layout.equals(floor.layout.layout) && layout.version.equals(floor.layout.version));
    }

    /**
     * {@code layout} is about to be shown in place of {@code current} (with {@code storing} held, before it is stored):
     * records it as pending, so that the cache file written next says so. Returns the layout to go back to.
     */
    private State beginPending(CompiledLayout layout, State current) {
        State back = pendingSince < 0 ? (current.source == Source.BUNDLE ? null : current) : fallback;
        if (cache != null) {
            boolean rendered = pendingSince < 0 && current.source != Source.BUNDLE && current.stored != null && current.validators.contains(current.stored);
            if (!(guarding(layout) && configuration.launchAttempts > 0)) {
                cache.previous = null;
            } else if (pendingSince < 0) {
                // The file holds the layout that rendered: kept as "previous" in the one written next.
                cache.previous = rendered ? LaunchGuard.strip(LaunchGuard.text(cache)) : null;
            }
        }
        LaunchGuard record = record();
        setRecord(guarding(layout) && configuration.launchAttempts > 0 ? record.withPending(layout.version, 1) : record.withPending(null, null));
        return back;
    }

    /** Starts (again) the wait for {@code readyTimeout} of the pending layout, by the device's clock (with {@code storing} held, or in the constructor). */
    private void startReadyTimer() {
        stopReadyTimer();
        final long since = pendingSince;
        if (configuration.readyTimeoutMillis <= 0 || since < 0) return;
        Thread timer = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    configuration.clock.sleepUntil(since + configuration.readyTimeoutMillis);
                } catch (InterruptedException e) {
                    return;
                }
                checkReady();
            }
        }, "tabclient-ready-" + configuration.account);
        timer.setDaemon(true);
        readyTimer = timer;
        timer.start();
    }

    private void stopReadyTimer() {
        if (readyTimer != null) readyTimer.interrupt();
        readyTimer = null;
    }

    /** Reverts the pending layout when {@code readyTimeout} has passed by the device's clock. */
    void checkReady() {
        long since = pendingSince;
        Integer version = state.layout.version;
        if (configuration.readyTimeoutMillis <= 0 || since < 0 || version == null) return;
        if (configuration.clock.currentTimeMillis() < since + configuration.readyTimeoutMillis) return;
        revert(version, "readyTimeout");
    }

    /** Goes back from the pending {@code version} to the last layout that rendered, else the bundle; blocks it. */
    private void revert(int version, String reason) {
        LayoutReference shown;
        synchronized (storing) {
            State current = state;
            if (pendingSince < 0 || current.layout.version == null || current.layout.version != version) return;
            LaunchGuard next = record().blocking(version);
            setRecord(next);
            // The file goes back with the layout shown: the last one that rendered when it kept it, else nothing (the bundle).
            String previous = cache == null ? null : cache.previous;
            if (cache != null) cache.previous = null;
            if (fallback == null || previous == null || !LaunchGuard.restore(cache, previous, next)) storeGuardQuietly(next, true);
            shown = show(fallback != null ? fallback : floor);
        }
        queueReport(version, "reverted", null, reason);
        emit(TabClientEvent.reverted(version, reason, shown));
        notifyListeners(state.layout, state.source);
    }

    /** Makes {@code back} current, not pending (with {@code storing} held). */
    private LayoutReference show(State back) {
        State now = state.with(back.layout, back.validators, back.source, null, false);
        state = now;
        pendingSince = -1;
        fallback = null;
        stopReadyTimer();
        return now.reference();
    }

    /**
     * The server's newest list of revoked versions (a manifest's, a {@code Tabs-Revoked} header): kept, and a version of it
     * shown or prefetched is dropped at once (the one shown for the last layout that rendered, else the bundle), each a
     * REVOKED event.
     */
    private void learnRevoked(List<Integer> versions) { revoke(versions, null); }

    /**
     * {@code …/tabs?version=N} (a manifest's choice or a prefetch) answered {@code 410 Gone}: {@code version} is revoked,
     * learnt as a list naming it would be (kept, dropped at once when shown or prefetched, never asked for again), and a
     * REVOKED event says so even when it was not shown. Returns the layout shown now.
     */
    private LayoutReference learnGone(int version) {
        revoke(null, version);
        return state.reference();
    }

    /**
     * Takes the server's list of revoked versions {@code versions} (null: {@code asked} answered 410 Gone); when it changed, drops what it now
     * refuses that is shown or prefetched (the one shown for the last layout that rendered, else the bundle), and reports
     * each version dropped, and {@code asked} (the version a request was for, or null), with a REVOKED event.
     */
    private void revoke(List<Integer> versions, Integer asked) {
        List<TabClientEvent> events = new ArrayList<TabClientEvent>();
        boolean changedShown = false;
        synchronized (storing) {
            LaunchGuard record = record();
            LaunchGuard next = versions == null ? record.withGone(asked) : record.withRevoked(versions);
            if (next.revoked.equals(record.revoked) && next.gone.equals(record.gone)) return;
            State current = state;
            if (current.pending != null && next.refuses(current.pending.layout.version)) {
                state = current.withPending(null);
                if (prefetchCache != null) prefetchCache.remove();
                events.add(TabClientEvent.revoked(version(current.pending.layout), current.reference()));
                current = state;
            }
            if (current.source == Source.BUNDLE || !next.refuses(current.layout.version)) {
                setRecord(next);
                storeGuardQuietly(next, false);
            } else {
                int version = current.layout.version;
                if (next.pending != null && next.pending == version) next = next.withPending(null, null);
                setRecord(next);
                storeGuardQuietly(next, true);
                State back = fallback != null && !next.refuses(fallback.layout.version) ? fallback : floor;
                events.add(TabClientEvent.revoked(version, show(back)));
                changedShown = true;
            }
            if (asked != null && next.refuses(asked) && !names(events, asked)) events.add(TabClientEvent.revoked(asked, state.reference()));
        }
        for (TabClientEvent event : events) emit(event);
        if (changedShown) notifyListeners(state.layout, state.source);
    }

    /** Whether one of {@code events} is about {@code version}. */
    private static boolean names(List<TabClientEvent> events, int version) {
        for (TabClientEvent event : events) {
            if (event.version == version) return true;
        }
        return false;
    }

    // Reports (ReportQueue): whether a layout worked on this phone, sent to POST …/tabs/reports so that a guarded rollout
    // can pause or roll back by itself.

    /**
     * Tells the server that tab {@code id}'s root screen could not be made or failed on open, with the layout shown now
     * ({@code reason}: a short text, cut to 200 characters; no personal data). Queued, and sent with the next batch.
     */
    public void reportTabFailed(String id, String reason) {
        Integer version = state.layout.version;
        if (version != null) queueReport(version, "tabFailed", id, reason);
    }

    /**
     * Sends the queued reports now, unless a batch went less than a minute ago or the server asked to wait
     * ({@code Retry-After}). Blocks on the network: never on the main thread. {@link #start()}'s loop calls it after each answer.
     */
    public void flushReports() { sendReports(false); }

    /**
     * The app goes to the background ({@code onStop} of the activity): sends the queued reports now (even within the minute;
     * never before a {@code Retry-After}) on a thread of its own, which it returns started.
     */
    public Thread appDidEnterBackground() {
        Thread sender = new Thread(new Runnable() {
            @Override
            public void run() {
                sendReports(true);
            }
        }, "tabclient-reports-" + configuration.account);
        sender.setDaemon(true);
        sender.start();
        return sender;
    }

    /** The reports waiting to be sent, oldest first. */
    public List<Report> queuedReports() { return reportQueue == null ? Collections.<Report>emptyList() : reportQueue.reports(); }

    private boolean queueReport(int version, String kind, String tab, String reason) {
        if (reportQueue == null) return false;
        long now = configuration.clock.currentTimeMillis();
        return reportQueue.add(new Report(version, kind, tab, reason, ReportQueue.format(now)), now);
    }

    /** A refused answer whose body still names its version: a {@code refused} report. */
    private void noteRefused(byte[] body, TabClientException error) {
        if (reportQueue == null) return;
        try {
            JSONObject object = new JSONObject(new String(body, CompiledLayout.UTF8));
            Object version = object.opt("version");
            if (version instanceof Integer) queueReport((Integer) version, "refused", null, error.getMessage());
        } catch (JSONException e) {
            // No version to name.
        }
    }

    /**
     * Posts one batch: {@code 2xx} and a refusal for good ({@code 4xx} but {@code 429}) take it off the queue; {@code 429}
     * and {@code 503} keep it until their {@code Retry-After} (a minute without one); {@code 5xx} and no network keep it.
     */
    private void sendReports(boolean force) {
        if (reportQueue == null) return;
        synchronized (sendingReports) {
            List<Report> batch = reportQueue.batch(configuration.clock.currentTimeMillis(), force);
            if (batch == null) return;
            byte[] body;
            URL url;
            try {
                JSONObject document = new JSONObject().put("installId", installId);
                if (configuration.platform != null) document.put("platform", configuration.platform);
                if (configuration.appVersion != null) document.put("appVersion", configuration.appVersion);
                JSONArray list = new JSONArray();
                for (Report report : batch) list.put(ReportQueue.item(report));
                document.put("reports", list);
                body = document.toString().getBytes(CompiledLayout.UTF8);
                url = configuration.reportsURL();
            } catch (JSONException e) {
                return;
            } catch (TabClientException e) {
                return;
            }
            ReportQueue.Posted posted = ReportQueue.post(url, body, configuration.environment, configuration.requestTimeoutMillis);
            long now = configuration.clock.currentTimeMillis();
            if (posted.status >= 200 && posted.status < 300) {
                reportQueue.sent(batch, now);
            } else if (posted.status == 429 || posted.status == 503) {
                reportQueue.keep(now + (posted.retryAfterMillis >= 0 ? posted.retryAfterMillis : ReportQueue.INTERVAL_MILLIS), now);
            } else if (posted.status >= 400 && posted.status < 500) {
                reportQueue.sent(batch, now);
            } else {
                reportQueue.keep(null, now);
            }
        }
    }

    private void notifyListeners(final CompiledLayout layout, final Source source) {
        for (final Registered registered : listeners) {
            registered.executor.execute(new Runnable() {
                @Override
                public void run() {
                    registered.listener.onLayout(layout, source);
                }
            });
        }
    }

    private void emitFailure(TabClientException error, long retryIn) {
        emit(new TabClientEvent(TabClientEvent.Kind.FAILED, reference(), null, error, retryIn, null, false));
    }

    private void emit(TabClientEvent event) {
        if (configuration.onEvent != null) configuration.onEvent.onEvent(event);
    }

    /**
     * Downloads {@code …/tabs/bundle} for the configuration's languages, platform, app version and environment: what an
     * app's build step ships, and what a program without a bundle starts from. No install id is made or sent.
     */
    public static LayoutBundle downloadBundle(TabClientConfig configuration) throws TabClientException {
        if (configuration.environment != null && TabClientConfig.environmentProblem(configuration.environment) != null) {
            configuration.validate();
        }
        Map<String, String> headers = new LinkedHashMap<String, String>();
        headers.put("Accept", "application/json");
        if (configuration.environment != null) headers.put("Tabs-Environment", configuration.environment);
        Http.Answer answer = new Http.Call(configuration.bundleURL(), headers, configuration.requestTimeoutMillis)
                .run(configuration.requestTimeoutMillis);
        if (answer.status != 200) throw TabClientException.status(answer.status, answer.problemDetail(), answer.retryAfterMillis());
        try {
            return LayoutBundle.parse(new String(answer.body, CompiledLayout.UTF8));
        } catch (RuntimeException | Error e) {
            throw unreadable(e);
        }
    }
}
