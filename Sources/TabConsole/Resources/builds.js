// The account page's builds × tabs matrix (docs/builds.md): every declared app build (live or not) against every
// tab and child tab of the version the environment serves and, while a rollout runs, of its candidate. A cell says
// whether that build gets the tab and can open it, cannot open it (its `rootViewController` is not among the
// build's `viewControllers`, or, when the build lists `images`, its image is not), gets it only with a parent it
// cannot open, or never gets it by the tab's targeting (`platforms`, `minAppVersion`, `maxAppVersion`).
//
// Targeting is the server's: the compiled layout (`GET …/tabs?version=N`) for each platform the builds have and,
// separately, for each app version they have; a build gets a tab when both answers have it. Neither request names
// a declared build (that takes platform and version together), so none counts as a sighting of one, which would
// keep a build live (and gated) because the console looked at it, or as an answer withheld or served in a
// rollout. What a build can open is the gate's rule over the names the build declared (docs/builds.md, "The gate").

import { send } from "./api.js";
import { byId, cell, formatTime, limited } from "./dom.js";

const platformNames = { iphone: "iPhone", ipad: "iPad", mac: "Mac", tv: "TV", vision: "Vision", android: "Android" };

/** `GET /v1/builds` → `[{platform, appVersion, viewControllers, images?, note?, declaredAt, lastSeenAt?, live}]`. */
async function listBuilds() {
  const response = await send("/v1/builds", { headers: { Accept: "application/json" } });
  return (await response.json()).builds ?? [];
}

/** Compiled layouts asked for at once: the server builds only a few new variants of a layout at a time. */
const variantsAtOnce = 2;
/** Times a 503 (`Retry-After`: variants of this layout are being built) is retried before it is shown. */
const busyRetries = 4;

/** The compiled layout of `account` (client plane): `version` pinned when given, else what `environment` serves. A
 * 503 while the server builds other variants of the layout is asked again after its `Retry-After` (at most 5 s). */
async function compiled(account, { version, environment, platform, appVersion }) {
  const query = new URLSearchParams();
  if (version) query.set("version", String(version));
  else if (environment) query.set("environment", environment);
  if (platform) query.set("platform", platform);
  if (appVersion) query.set("appVersion", appVersion);
  for (let attempt = 0; ; attempt += 1) {
    try {
      const response = await send(`/v1/accounts/${encodeURIComponent(account)}/tabs?${query}`, {
        admin: false,
        headers: { Accept: "application/json" },
      });
      return await response.json();
    } catch (error) {
      if (error.status !== 503 || attempt >= busyRetries) throw error;
      const seconds = Math.min(Number(error.headers.get("Retry-After")) || 1, 5);
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    }
  }
}

/** Every tab and child of a compiled layout (those under More too), in order: `{key, tab, depth, parent}`, where
 * `key` is the ids from the top (`home/feed`). */
export function tabsOf(layout) {
  const rows = [];
  const walk = (tabs, parent, depth) => {
    for (const tab of tabs ?? []) {
      const key = parent ? `${parent.key}/${tab.id}` : String(tab.id);
      const row = { key, tab, depth, parent };
      rows.push(row);
      walk(tab.children, row, depth + 1);
    }
  };
  walk([...(layout.tabs ?? []), ...(layout.more?.tabs ?? [])], null, 0);
  return rows;
}

/** `2.10` after `2.9`: version numbers compared part by part. */
function compareVersions(a, b) {
  const left = String(a).split(".").map(Number);
  const right = String(b).split(".").map(Number);
  for (let index = 0; index < Math.max(left.length, right.length); index += 1) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** What `build` lacks to open `tab`: the names it does not declare (the gate's rule), or []. */
function lacks(build, tab) {
  const missing = [];
  if (!(build.viewControllers ?? []).includes(tab.rootViewController)) missing.push(tab.rootViewController);
  if (Array.isArray(build.images)) {
    for (const image of [tab.image, tab.selectedImage]) if (image && !build.images.includes(image)) missing.push(image);
  }
  return missing;
}

export class BuildsMatrix {
  /**
   * @param {{busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>,
   *   served: () => {account: string | null, exists: boolean, listed: boolean, environment: string | null,
   *     stable: number | null, candidate: {version: number, percent: number} | null}}} context
   *   `served` says what the page shows: the account, whether it has a layout of its own and its versions were
   *   listed yet, the environment, the version that environment serves (null: none of the account's, so the
   *   default layout's) and a running rollout's candidate.
   */
  constructor(context) {
    this.context = context;
    this.summary = byId("builds-summary");
    this.meta = byId("builds-meta");
    this.matrices = byId("builds-matrices");
    this.key = null;
    this.request = 0;
    byId("builds-reload").addEventListener("click", (event) => this.context.busy(event.currentTarget, () => this.refresh()));
  }

  /** Draws the matrices again when what is served changed since they were drawn (or `force`). */
  async update({ force = false } = {}) {
    const served = this.context.served();
    // The account's versions are not listed yet (it is being opened): wait for them rather than ask for what is
    // served without a version, which a running rollout would count as an answer served.
    if (served.account && served.exists && !served.listed) return;
    const key = JSON.stringify(served);
    if (!force && key === this.key) return;
    this.key = key;
    await this.draw(served);
  }

  /** Reads the builds and the layouts again. */
  refresh() {
    return this.update({ force: true });
  }

  /** No account (signing out). */
  clear() {
    this.request += 1;
    this.key = null;
    this.matrices.replaceChildren();
    this.meta.textContent = "";
    this.summary.textContent = "No account open.";
  }

  async draw(served) {
    const request = ++this.request;
    if (!served.account) {
      this.clear();
      return;
    }
    const builds = (await listBuilds()).sort(
      (a, b) => a.platform.localeCompare(b.platform) || compareVersions(a.appVersion, b.appVersion),
    );
    if (request !== this.request) return;
    if (builds.length === 0) {
      this.matrices.replaceChildren();
      this.meta.textContent = "";
      this.summary.textContent =
        "No app build is declared, so every client gets every tab. Builds declare what they can open with " +
        "PUT /v1/builds/{platform}/{appVersion} (docs/builds.md).";
      return;
    }
    const versions = [{ version: served.exists ? served.stable : null, name: "Served" }];
    if (served.candidate) versions.push({ version: served.candidate.version, name: "Rollout candidate" });
    const tables = await limited(versions.map((entry) => () => this.matrix(served, entry, builds)), 1);
    if (request !== this.request) return;
    const live = builds.filter((build) => build.live).length;
    this.meta.textContent = `(${builds.length} build${builds.length === 1 ? "" : "s"}, ${live} live)`;
    const blocked = tables.reduce((sum, table) => sum + table.blocked, 0);
    this.summary.textContent =
      blocked === 0
        ? "Every declared build can open every tab it gets."
        : "A marked cell is a tab that build is not sent: it cannot open it (the gate refuses such a change while the build is live) " +
          "or gets it only with a parent it cannot open.";
    this.matrices.replaceChildren(...tables.map((table) => table.element));
  }

  /** One version's matrix: rows are builds, columns tabs and children. */
  async matrix(served, { version, name }, builds) {
    const base = { version, environment: served.environment };
    const platforms = [...new Set(builds.map((build) => build.platform))];
    const appVersions = [...new Set(builds.map((build) => build.appVersion))];
    const [all, ...narrowed] = await limited(
      [
        () => compiled(served.account, base),
        ...platforms.map((platform) => () => compiled(served.account, { ...base, platform })),
        ...appVersions.map((appVersion) => () => compiled(served.account, { ...base, appVersion })),
      ],
      variantsAtOnce,
    );
    const keys = (layout) => new Set(tabsOf(layout).map((row) => row.key));
    const byPlatform = new Map(platforms.map((platform, index) => [platform, keys(narrowed[index])]));
    const byVersion = new Map(appVersions.map((appVersion, index) => [appVersion, keys(narrowed[platforms.length + index])]));
    const columns = tabsOf(all);

    const table = document.createElement("table");
    table.className = "builds-matrix";
    table.dataset.version = String(all.version ?? "");
    const caption = document.createElement("caption");
    caption.textContent = `${name}: version ${all.version ?? "?"} of ${all.layout ?? served.account}${
      served.candidate && name !== "Served" ? ` (${served.candidate.percent}% of installs)` : ""
    }`;
    table.append(caption);
    const head = table.createTHead().insertRow();
    const corner = document.createElement("th");
    corner.scope = "col";
    corner.textContent = "Build";
    head.append(corner);
    for (const column of columns) {
      const th = document.createElement("th");
      th.scope = "col";
      th.dataset.tab = column.key;
      th.textContent = column.parent ? `${column.parent.tab.title} › ${column.tab.title}` : String(column.tab.title ?? column.tab.id);
      th.title = `${column.key}: ${column.tab.rootViewController}`;
      head.append(th);
    }
    let blocked = 0;
    const body = table.createTBody();
    for (const build of builds) {
      const row = body.insertRow();
      const id = `${build.platform} ${build.appVersion}`;
      row.dataset.build = id;
      row.dataset.live = String(Boolean(build.live));
      const header = cell(`${platformNames[build.platform] ?? build.platform} ${build.appVersion}`, { header: true });
      const state = document.createElement("span");
      state.className = "meta";
      state.textContent = build.live ? " live" : ` not live (seen ${formatTime(build.lastSeenAt, "never")})`;
      header.append(state);
      if (build.note) header.title = build.note;
      row.append(header);
      const verdicts = new Map();
      for (const column of columns) {
        const verdict = this.verdict(build, column, byPlatform.get(build.platform), byVersion.get(build.appVersion), verdicts);
        verdicts.set(column.key, verdict);
        if (verdict.state === "missing" || verdict.state === "withheld") blocked += 1;
        const td = document.createElement("td");
        td.className = `verdict ${verdict.state}`;
        td.dataset.tab = column.key;
        td.dataset.state = verdict.state;
        td.textContent = verdict.text;
        row.append(td);
      }
      // A build that can open none of the tabs it would get: said on its row, as the cells alone are easy to misread.
      const top = columns.filter((column) => !column.parent).map((column) => verdicts.get(column.key).state);
      if (top.includes("missing") && !top.includes("opens")) {
        row.dataset.opensNone = "true";
        state.textContent += " · opens none of the tabs it would get";
      }
    }
    return { element: table, blocked };
  }

  /** One cell: `opens`, `missing` (lacks a name), `withheld` (a parent is missing), or `untargeted`. */
  verdict(build, column, platformKeys, versionKeys, earlier) {
    const name = platformNames[build.platform] ?? build.platform;
    if (!platformKeys?.has(column.key)) return { state: "untargeted", text: `— not for ${name}` };
    if (!versionKeys?.has(column.key)) return { state: "untargeted", text: `— not for app version ${build.appVersion}` };
    const missing = lacks(build, column.tab);
    if (missing.length > 0) return { state: "missing", text: `✗ cannot open: no ${missing.join(", no ")}` };
    const parent = column.parent ? earlier.get(column.parent.key) : null;
    if (parent && (parent.state === "missing" || parent.state === "withheld")) {
      return { state: "withheld", text: `✗ withheld with ${column.parent.tab.title ?? column.parent.tab.id}` };
    }
    return { state: "opens", text: "✓ opens" };
  }
}
