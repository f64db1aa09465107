// The change requests page (docs/change-requests.md): every request still waiting (open, or approved and not yet
// applied), each with its tab-level diff against what its environment serves now (the request's `diff`), the tab
// bars apps get now and would get after it for each platform and locale it touches, and the buttons the token may
// use on it: approve and reject (`approve`, over its account, or every account for a strings table, and its
// environment; never approve by its author), cancel (its author with `write`, or an admin) and apply (`write`, once
// approved). Which ones is decided here, from what `GET /v1/tokens/self` said (pages.js); the server checks again.

import { reaches } from "./access-api.js";
import { getLocales, send } from "./api.js";
import { renderDiff } from "./diff.js";
import { button, byId, formatTime, limited, problemItems } from "./dom.js";
import * as review from "./review-api.js";

/** The platforms a tab can be targeted at (docs/layout-format.md), in the console's order. */
export const platforms = ["iphone", "ipad", "mac", "tv", "vision", "android"];
const platformNames = { iphone: "iPhone", ipad: "iPad", mac: "Mac", tv: "TV", vision: "Vision", android: "Android" };

/** Drawings asked for at once per request (each is a compile and a drawing on the server). */
const drawingsAtOnce = 4;

/** The drawing without its caption (`<title>` naming the layout and version), to compare what is drawn. */
function drawn(svg) {
  return svg.replace(/<title>[^<]*<\/title>/, "");
}

/** What a request changes: its account's layout, or a strings table (which belongs to no account). */
function subject(request) {
  return request.locale ? `strings table ${request.locale}` : (request.account ?? "?");
}

export class ChangeRequestsPage {
  /**
   * @param {{announce: (text: string) => void, warn: (text: string) => void,
   *   busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>,
   *   abilities: () => {name: string, admin: boolean, write: boolean, approve: boolean, accounts: string[], environments: string[] | null}}} context
   */
  constructor(context) {
    this.context = context;
    this.list = byId("change-list");
    this.summary = byId("changes-summary");
    this.errors = byId("changes-errors");
    this.loading = 0;
    byId("changes-reload").addEventListener("click", (event) => this.context.busy(event.currentTarget, () => this.load()));
  }

  /** The requests still waiting, oldest first: open ones and approved ones not yet applied. */
  async load() {
    const loading = ++this.loading;
    const [open, approved] = await Promise.all([review.listChangeRequests("open"), review.listChangeRequests("approved")]);
    if (loading !== this.loading) return;
    const waiting = [...open, ...approved].sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)));
    this.summary.textContent =
      waiting.length === 0
        ? "No change request is waiting. In an environment that needs approval (--require-approval), a save is held here."
        : `${waiting.length} change request${waiting.length === 1 ? "" : "s"} waiting, oldest first.`;
    const items = waiting.map((request) => this.item(request));
    this.list.replaceChildren(...items.map((entry) => entry.element));
    await Promise.all(items.map((entry) => entry.fill().catch((error) => entry.failed(error))));
  }

  /** Signing out: nothing of the page left on screen. */
  clear() {
    this.loading += 1;
    this.list.replaceChildren();
    this.summary.textContent = "";
    this.clearProblem();
  }

  /** An `event: change-request` (its data the request): the list is read again when the page is shown. */
  onEvent() {
    if (!byId("changes-page").hidden) this.load().catch((error) => this.context.warn(error.message));
  }

  // MARK: One request

  /** The request's element at once (facts and buttons), and `fill` drawing its diff and tab bars. */
  item(request) {
    const element = document.createElement("li");
    element.className = "change-request";
    element.dataset.changeRequest = request.id;
    element.dataset.state = request.state;
    const heading = document.createElement("h3");
    heading.textContent = `${subject(request)} in ${request.environment}: ${request.action}`;
    const facts = document.createElement("dl");
    facts.className = "change-facts";
    const fact = (term, text) => {
      const dt = document.createElement("dt");
      dt.textContent = term;
      const dd = document.createElement("dd");
      dd.textContent = text;
      facts.append(dt, dd);
      return dd;
    };
    fact("Request", request.id);
    fact("State", request.state).dataset.field = "state";
    fact("Author", `${request.author} · ${formatTime(request.createdAt)}`);
    const approvals = (request.approvals ?? []).map((entry) => `${entry.by} (${formatTime(entry.at)})`);
    fact("Approvals", `${approvals.length} of ${request.required}${approvals.length ? `: ${approvals.join(", ")}` : ""}`).dataset.field =
      "approvals";
    if (request.version) fact("Content", `draft version ${request.version}`);
    if (request.applyAt) fact("Applies at", formatTime(request.applyAt));

    const diff = document.createElement("div");
    diff.className = "change-diff";
    diff.textContent = "Loading the changes…";
    const bars = document.createElement("div");
    bars.className = "change-bars";
    element.append(heading, facts, this.actions(request), diff, bars);
    return {
      element,
      fill: () => this.fill(request, diff, bars),
      failed: (error) => {
        diff.textContent = `The changes could not be shown: ${error.message}`;
      },
    };
  }

  /** The buttons this token may use on `request`, and a reason field with reject. */
  actions(request) {
    const may = this.context.abilities();
    const reach = reaches(may, request.locale ? null : request.account, request.environment);
    const waiting = request.state === "open" || request.state === "approved";
    const approvedBy = (request.approvals ?? []).some((entry) => entry.by === may.name);
    const box = document.createElement("div");
    box.className = "change-actions";
    const named = (text) => `${text} ${request.id}`;
    if (reach && may.approve && request.state === "open" && request.author !== may.name && !approvedBy) {
      const approve = button("Approve", { label: named("Approve") });
      approve.addEventListener("click", () => this.act(approve, () => review.approve(request.id), "Approved"));
      box.append(approve);
    }
    if (reach && may.write && request.state === "approved") {
      const apply = button("Apply", { label: named("Apply"), className: "primary" });
      apply.addEventListener("click", () => this.act(apply, () => review.apply(request.id), "Applied"));
      box.append(apply);
    }
    if (reach && waiting && (may.admin || (may.write && request.author === may.name))) {
      const cancel = button("Cancel", { label: named("Cancel") });
      cancel.addEventListener("click", () => this.act(cancel, () => review.cancel(request.id), "Cancelled"));
      box.append(cancel);
    }
    if (reach && may.approve && waiting) {
      const reason = document.createElement("input");
      reason.autocomplete = "off";
      reason.placeholder = "why not";
      reason.setAttribute("aria-label", named("Reason to reject"));
      reason.className = "reject-reason";
      const reject = button("Reject", { label: named("Reject"), className: "danger" });
      reject.addEventListener("click", () => {
        const why = reason.value.trim();
        if (!why) {
          this.context.warn("Say why it is rejected (the reason is recorded with it).");
          reason.focus();
          return;
        }
        this.act(reject, () => review.reject(request.id, why), "Rejected");
      });
      box.append(reason, reject);
    }
    if (box.children.length === 0) {
      box.className = "change-actions help";
      box.textContent = !reach
        ? "This token does not reach its account or environment."
        : request.author === may.name && may.approve
          ? "You made this change: someone else approves it."
          : "This token may not review or apply it.";
    }
    return box;
  }

  /** Runs a review step; the page is read again after it, and a refusal shown with its problem. */
  act(control, step, done) {
    return this.context.busy(control, async () => {
      this.clearProblem();
      let answer;
      try {
        answer = await step();
      } catch (error) {
        if (error.status === undefined || error.status === 0 || error.status === 401) throw error;
        this.showProblem(error);
        this.context.warn(`Refused: ${error.message}`);
        await this.load();
        return;
      }
      await this.load();
      const request = answer?.changeRequest ?? answer;
      const state = request?.state ? ` (${request.state})` : "";
      this.context.announce(`${done} change request ${request?.id ?? ""}${state}.`);
    });
  }

  clearProblem() {
    this.errors.hidden = true;
    byId("changes-error-text").textContent = "";
    byId("changes-error-list").replaceChildren();
  }

  showProblem(error) {
    const problem = error.problem ?? {};
    byId("changes-errors-heading").textContent = `The server refused that (${error.status} ${problem.title ?? "error"})`;
    byId("changes-error-text").textContent = problem.detail ?? error.message;
    byId("changes-error-list").replaceChildren(...problemItems(Array.isArray(problem.errors) ? problem.errors : []));
    this.errors.hidden = false;
    byId("changes-errors-heading").focus();
  }

  // MARK: What it changes

  /**
   * The diff against the version the environment points at now, and the tab bars before and after. "Now" is the
   * account's version there, or `default`'s when it has none (apps fall back to it); "after" is the request's
   * draft, or `default`'s for a deletion.
   */
  async fill(request, diffBox, barsBox) {
    const environment = request.environment;
    if (request.locale) {
      diffBox.textContent =
        `Writes the strings table ${request.locale} in ${environment} when it is applied: the titles of every layout ` +
        "that uses it change. A table has no versions to draw before then, so no tab bar is drawn here.";
      return;
    }
    const pointed = async (account) =>
      (await review.versionsOf(account)).find((entry) => (entry.environments ?? []).includes(environment))?.version ?? null;
    const own = await pointed(request.account);
    const now = own ? { account: request.account, version: own } : await this.fallback(pointed);
    const deleting = request.action === "layout.delete";
    const after = deleting ? await this.fallback(pointed) : request.version ? { account: request.account, version: request.version } : null;

    if (deleting) {
      diffBox.textContent = `Deletes ${request.account}'s layout in ${environment}: apps would get the default layout.`;
    } else if (request.diff) {
      const made = own ? [] : [`Makes ${request.account}'s own layout in ${environment} (apps get the default layout now).`];
      diffBox.replaceChildren(...made, renderDiff(request.diff));
    } else if (own && request.version) {
      const path = `/v1/accounts/${encodeURIComponent(request.account)}/layout/versions/${request.version}/diff?against=${own}`;
      diffBox.replaceChildren(renderDiff(await (await send(path, { headers: { Accept: "application/json" } })).json()));
    } else {
      diffBox.textContent = "The server gave no diff for this request.";
    }
    await this.drawBars(request, now, after, barsBox);
  }

  /** `default`'s version in the environment (what an account without a layout of its own gets), or null. */
  async fallback(pointed) {
    try {
      const version = await pointed("default");
      return version ? { account: "default", version } : null;
    } catch {
      return null;
    }
  }

  /**
   * Both sides drawn for every platform and locale; the pairs whose drawings differ are what the change touches,
   * grouped when they look alike. When none differs, the default pair is shown and the page says so.
   */
  async drawBars(request, now, after, box) {
    const environment = request.environment;
    if (!now || !after) {
      box.textContent = "The tab bars cannot be drawn: one side has no layout this token may read.";
      return;
    }
    let locales = [];
    try {
      locales = await getLocales(request.account);
    } catch {
      locales = [];
    }
    const localeChoices = locales.length > 0 ? locales : [""];
    const pairs = [];
    for (const locale of localeChoices) for (const platform of platforms) pairs.push({ locale, platform });
    const draw = (side, pair) => review.drawVersion(side.account, side.version, { ...pair, environment });
    const drawings = await limited(
      pairs.map((pair) => async () => {
        const [before, next] = await Promise.allSettled([draw(now, pair), draw(after, pair)]);
        return { pair, before, next };
      }),
      drawingsAtOnce,
    );
    const failure = drawings.find((entry) => entry.next.status === "rejected" || entry.before.status === "rejected");
    if (failure) {
      const reason = failure.next.status === "rejected" ? failure.next.reason : failure.before.reason;
      box.textContent = `The tab bars could not be drawn: ${reason.message}`;
      return;
    }
    const groups = new Map();
    for (const { pair, before, next } of drawings) {
      const key = `${drawn(before.value.svg)}\u0000${drawn(next.value.svg)}`;
      const touched = drawn(before.value.svg) !== drawn(next.value.svg);
      if (!groups.has(key)) groups.set(key, { touched, pairs: [], before: before.value, next: next.value });
      groups.get(key).pairs.push(pair);
    }
    let shown = [...groups.values()].filter((group) => group.touched);
    const heading = document.createElement("h4");
    if (shown.length === 0) {
      shown = [[...groups.values()][0]];
      heading.textContent = "Nothing the tab bar shows changes, on any platform or locale (see the changes above)";
    } else {
      const count = shown.reduce((sum, group) => sum + group.pairs.length, 0);
      heading.textContent = `The tab bar changes for ${count} of ${pairs.length} platform and locale pairs`;
    }
    box.replaceChildren(heading, ...shown.map((group) => this.barPair(group, now, after)));
  }

  /** One group of platform and locale pairs that look alike: now and after side by side. */
  barPair(group, now, after) {
    const where = document.createElement("div");
    where.className = "bar-pair";
    const byLocale = new Map();
    for (const { locale, platform } of group.pairs) {
      if (!byLocale.has(locale)) byLocale.set(locale, []);
      byLocale.get(locale).push(platformNames[platform] ?? platform);
    }
    const caption = document.createElement("p");
    caption.className = "bar-pair-caption";
    caption.textContent = [...byLocale]
      .map(([locale, names]) => `${names.length === platforms.length ? "every platform" : names.join(", ")} · ${locale || "default locale"}`)
      .join("; ");
    where.dataset.platforms = [...new Set(group.pairs.map((pair) => pair.platform))].join(" ");
    where.dataset.locales = [...new Set(group.pairs.map((pair) => pair.locale))].join(" ");
    const figures = document.createElement("div");
    figures.className = "side-by-side";
    const figure = (side, drawing, name, arm) => {
      const element = document.createElement("figure");
      element.className = "tab-bar";
      element.dataset.arm = arm;
      const image = document.createElement("img");
      image.src = drawing.url;
      image.alt = `${name}: tab bar of ${side.account} version ${side.version} (${caption.textContent})`;
      const label = document.createElement("figcaption");
      label.textContent = `${name} · ${side.account} version ${side.version}`;
      element.append(image, label);
      return element;
    };
    figures.append(figure(now, group.before, "Now", "now"), figure(after, group.next, "After", "after"));
    where.append(caption, figures);
    return where;
  }
}
