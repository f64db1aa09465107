// The operators' console: sign in, accounts, preview and compiled JSON, editing with errors at their line,
// conflicts shown as a diff, history with restore, and the change feed; the change requests, tokens, audit and
// webhooks pages are pages.js's, the rollout panel rollout.js's, the builds × tabs matrix builds.js's. Plain ES
// modules, no framework.

import * as api from "./api.js";
import { BuildsMatrix } from "./builds.js";
import { renderDiff } from "./diff.js";
import { heldForReviewText } from "./dom.js";
import { SourceEditor } from "./editor.js";
import { ChangeFeed } from "./events.js";
import { Pages } from "./pages.js";
import { PromotionPanel } from "./promotion.js";
import { RolloutPanel } from "./rollout.js";
import { rolloutFeedItem } from "./rollout-format.js";
import { gateErrorLine } from "./source-lines.js";

const $ = (id) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
};

const ui = {
  who: $("who"),
  signOut: $("sign-out"),
  status: $("status"),
  alert: $("alert"),
  signIn: $("sign-in"),
  signInForm: $("sign-in-form"),
  token: $("token"),
  workspace: $("workspace"),
  search: $("search"),
  searchForm: $("account-search"),
  pageSize: $("page-size"),
  accountList: $("account-list"),
  accountEmpty: $("account-empty"),
  pagePrevious: $("page-previous"),
  pageNext: $("page-next"),
  pageNumber: $("page-number"),
  accountHeading: $("account-heading"),
  accountSummary: $("account-summary"),
  accountBody: $("account-body"),
  remoteChange: $("remote-change"),
  remoteChangeText: $("remote-change-text"),
  remoteChangeLoad: $("remote-change-load"),
  variant: $("variant"),
  locale: $("locale"),
  localeOptions: $("locale-options"),
  platform: $("platform"),
  scheme: $("scheme"),
  previewFigure: $("preview-figure"),
  previewImage: $("preview-image"),
  previewCaption: $("preview-caption"),
  compiledMeta: $("compiled-meta"),
  compiledJSON: $("compiled-json"),
  sourceMeta: $("source-meta"),
  changeMessage: $("change-message"),
  check: $("check"),
  previewEdits: $("preview-edits"),
  save: $("save"),
  saveDraft: $("save-draft"),
  revert: $("revert"),
  conflict: $("conflict"),
  conflictHeading: $("conflict-heading"),
  conflictText: $("conflict-text"),
  conflictDiff: $("conflict-diff"),
  conflictOverwrite: $("conflict-overwrite"),
  conflictDiscard: $("conflict-discard"),
  historyRows: $("history-rows"),
  historyDiff: $("history-diff"),
  historyDiffHeading: $("history-diff-heading"),
  historyDiffBody: $("history-diff-body"),
  feedState: $("feed-state"),
  feedList: $("feed-list"),
};

const editor = new SourceEditor({
  textarea: $("source"),
  gutter: $("gutter"),
  errorBox: $("source-errors"),
  errorList: $("source-error-list"),
  errorHeading: $("source-errors-heading"),
});

const state = {
  /** The open account's name, or null. */
  account: null,
  /** The source the editor started from: `{exists, etag, version, contentType, binary}`. */
  layout: null,
  /** The newer version a refused save ran into: `{etag, version, text, contentType}`. */
  conflict: null,
  /** ETags of versions this console wrote, to tell its own changes from others' in the feed. */
  ownETags: new Set(),
  /** A write of this console still waiting for its answer: feed events wait for it, so that the console's own
   * change is known as its own even when the event arrives before the answer. */
  pendingWrite: null,
  /** Paging: `after` cursors of the pages seen so far; `index` is the page shown. */
  cursors: [""],
  index: 0,
  next: null,
  prefix: "",
};

const feedLimit = 50;

// MARK: Messages

/** Says `text` in the polite status region (and clears the alert). */
function announce(text) {
  ui.alert.textContent = "";
  ui.status.textContent = text;
}

/** Says `text` in the assertive alert region (and clears the status). */
function warn(text) {
  ui.status.textContent = "";
  ui.alert.textContent = text;
}

/** Says what failed; a refused token (401) signs out, as every later request would be refused too. */
function fail(error) {
  if (error.name === "AbortError") return;
  if (error.status === 401 && api.storedToken()) {
    signOut();
    warn("The server refused the token (401): sign in again.");
    return;
  }
  if (error.status === 403) {
    warn(`This token may not do that (${error.message}).`);
    return;
  }
  warn(error.message);
}

/** Runs `work` with `button` disabled meanwhile; failures become an alert. */
async function busy(button, work) {
  if (button) button.disabled = true;
  try {
    await work();
  } catch (error) {
    fail(error);
  } finally {
    if (button) button.disabled = false;
    refreshControls();
  }
}

/** Enables the buttons that depend on the state (paging, editing) as the state says. */
function refreshControls() {
  ui.pagePrevious.disabled = state.index === 0;
  ui.pageNext.disabled = !state.next;
  const editable = Boolean(state.layout) && !state.layout.binary && pages.abilities.write;
  for (const button of [ui.check, ui.previewEdits, ui.save, ui.saveDraft, ui.revert]) button.disabled = !editable;
  $("source").readOnly = !editable;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "short", timeStyle: "medium" });

function formatTime(text) {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? String(text ?? "") : timeFormat.format(date);
}

// MARK: Signing in

async function signIn(token) {
  api.storeToken(token);
  try {
    await api.listAccounts({ limit: 1 });
  } catch (error) {
    api.forgetToken();
    if (error.status === 401) {
      warn("That token was refused (401): it is unknown, expired or revoked.");
      ui.token.select();
      ui.token.focus();
      return;
    }
    throw error;
  }
  ui.token.value = "";
  showWorkspace();
  announce("Signed in.");
  ui.search.focus();
}

function showWorkspace() {
  ui.signIn.hidden = true;
  ui.workspace.hidden = false;
  ui.who.hidden = false;
  ui.signOut.hidden = false;
  feed.start();
  resetPaging();
  loadAccounts().catch(fail);
  pages.start().then(refreshControls, fail);
}

function signOut() {
  feed.stop();
  pages.stop();
  rollout.stop();
  builds.clear();
  api.forgetToken();
  state.account = null;
  state.layout = null;
  ui.workspace.hidden = true;
  ui.who.hidden = true;
  ui.signOut.hidden = true;
  ui.signIn.hidden = false;
  ui.accountList.replaceChildren();
  ui.feedList.replaceChildren();
  ui.accountBody.hidden = true;
  ui.accountHeading.textContent = "No account open";
  announce("Signed out; the token was forgotten.");
  ui.token.focus();
}

// MARK: Accounts

/** The `after` cursor at which the names starting with `prefix` begin (account names never contain `~`). */
function startCursor(prefix) {
  if (prefix === "") return "";
  const last = prefix.charCodeAt(prefix.length - 1);
  return `${prefix.slice(0, -1)}${String.fromCharCode(last - 1)}~`;
}

function resetPaging() {
  state.prefix = ui.search.value.trim();
  state.cursors = [startCursor(state.prefix)];
  state.index = 0;
}

let accountsRequest = 0;

async function loadAccounts() {
  const limit = Number(ui.pageSize.value);
  const request = ++accountsRequest;
  const page = await api.listAccounts({ after: state.cursors[state.index], limit });
  // Pages can be asked for faster than they come: show only the answer to the latest request.
  if (request !== accountsRequest) return;
  const all = page.accounts ?? [];
  const matching = all.filter((entry) => entry.account.startsWith(state.prefix));
  // Names are sorted: once one does not start with the prefix, no later page has one that does.
  state.next = matching.length === all.length ? page.next : null;
  renderAccounts(matching);
  refreshControls();
  ui.pageNumber.textContent = `Page ${state.index + 1}`;
}

function renderAccounts(entries) {
  const items = entries.map((entry) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "account-button";
    button.dataset.account = entry.account;
    if (entry.account === state.account) button.setAttribute("aria-current", "true");
    const name = document.createElement("span");
    name.className = "account-name";
    name.textContent = entry.account;
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = `version ${entry.version} · ${formatTime(entry.updatedAt)}`;
    button.append(name, meta);
    button.addEventListener("click", () => openAccount(entry.account).catch(fail));
    item.append(button);
    return item;
  });
  // A re-render (a change came in) must not take the keyboard focus away from the account it was on.
  const focused = ui.accountList.contains(document.activeElement) ? document.activeElement.dataset.account : null;
  ui.accountList.replaceChildren(...items);
  ui.accountEmpty.hidden = entries.length > 0;
  if (focused) ui.accountList.querySelector(`button[data-account="${CSS.escape(focused)}"]`)?.focus();
}

function markCurrentAccount() {
  for (const button of ui.accountList.querySelectorAll("button[data-account]")) {
    if (button.dataset.account === state.account) button.setAttribute("aria-current", "true");
    else button.removeAttribute("aria-current");
  }
}

// MARK: One account

async function openAccount(account) {
  if (state.account && state.account !== account && editor.dirty) {
    announce(`Unsaved edits to ${state.account} were discarded.`);
  }
  state.account = account;
  state.conflict = null;
  markCurrentAccount();
  ui.accountHeading.textContent = account;
  ui.accountSummary.textContent = "Loading…";
  ui.accountBody.hidden = false;
  ui.conflict.hidden = true;
  ui.remoteChange.hidden = true;
  ui.historyDiff.hidden = true;
  ui.locale.value = "";
  ui.platform.value = "";
  ui.accountHeading.focus();
  await loadSource();
  await Promise.all([refreshVariant(), refreshHistory(), refreshLocales(), rollout.show(account)]);
  if (state.account === account) announce(`Opened ${account}.`);
}

/** Loads the current source into the editor. */
async function loadSource() {
  const account = state.account;
  try {
    const layout = await api.getLayout(account);
    if (account !== state.account) return;
    state.layout = { exists: true, ...layout };
    editor.load(layout.binary ? "(a binary property list: it cannot be edited here)" : layout.text, {
      editable: !layout.binary && pages.abilities.write,
    });
    ui.sourceMeta.textContent = `version ${layout.version} · ${layout.contentType} · ETag ${layout.etag}`;
    ui.accountSummary.textContent = `Version ${layout.version}.`;
  } catch (error) {
    if (error.status !== 404) throw error;
    state.layout = { exists: false, etag: null, version: 0, contentType: "application/json", binary: false };
    editor.load("");
    ui.sourceMeta.textContent = "no layout of its own";
    ui.accountSummary.textContent = `${account} has no layout of its own: clients get the default layout. Saving a source creates one.`;
  }
  refreshControls();
}

/** What the previews draw: the locale and platform chosen, and the appearance ("light" or "dark"). */
function variant() {
  return { locale: ui.locale.value.trim(), platform: ui.platform.value, scheme: ui.scheme.value === "dark" ? "dark" : "light" };
}

function variantName({ locale, platform, scheme }) {
  return `${locale || "default locale"}, ${platform || "any platform"}, ${scheme === "dark" ? "dark" : "light"}`;
}

/** The preview and the compiled JSON of the saved layout, for the chosen locale and platform. */
async function refreshVariant() {
  const account = state.account;
  const chosen = variant();
  const [preview, compiled] = await Promise.allSettled([api.getPreview(account, chosen), api.getCompiled(account, chosen)]);
  if (account !== state.account) return;
  if (preview.status === "fulfilled") {
    ui.previewImage.src = preview.value.url;
    ui.previewFigure.dataset.scheme = chosen.scheme;
    ui.previewImage.alt = `Tab bar of ${account} as drawn by the server (${variantName(chosen)})`;
    ui.previewImage.hidden = false;
    ui.previewCaption.textContent = `Saved layout · ${variantName(chosen)} · ETag ${preview.value.etag}`;
  } else {
    ui.previewImage.hidden = true;
    ui.previewImage.removeAttribute("src");
    ui.previewCaption.textContent = `No preview: ${preview.reason.message}`;
  }
  if (compiled.status === "fulfilled") {
    const value = JSON.parse(compiled.value.text);
    ui.compiledJSON.textContent = JSON.stringify(value, null, 2);
    ui.compiledMeta.textContent = `(${compiled.value.language ?? "?"} · ETag ${compiled.value.etag})`;
  } else {
    ui.compiledJSON.textContent = compiled.reason.message;
    ui.compiledMeta.textContent = "";
  }
  rollout.redraw();
}

/** Fills the locale suggestions: the locales the server lists for the layout, else those in a JSON source. */
async function refreshLocales() {
  const account = state.account;
  let locales = [];
  try {
    locales = await api.getLocales(account);
  } catch {
    try {
      locales = Object.keys(JSON.parse(editor.text).strings ?? {});
    } catch {
      locales = [];
    }
  }
  if (account !== state.account) return;
  ui.localeOptions.replaceChildren(
    ...locales.map((locale) => {
      const option = document.createElement("option");
      option.value = locale;
      return option;
    }),
  );
}

async function refreshHistory() {
  const account = state.account;
  let versions = [];
  try {
    versions = await api.listVersions(account);
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  if (account !== state.account) return;
  rollout.setVersions(versions);
  promotion.setVersions(account, versions);
  builds.update().catch(fail);
  // The current version is the one an environment points at (a newer one may be a draft); a server that does not
  // list environments lists newest first, the first being current unless the layout was deleted.
  let current = versions[0] && !versions[0].deleted ? versions[0].version : null;
  if (versions.some((entry) => Array.isArray(entry.environments))) {
    current = versions.find((entry) => (entry.environments ?? []).length > 0)?.version ?? null;
  }
  const rows = versions.map((entry) => {
    const row = document.createElement("tr");
    row.dataset.version = String(entry.version);
    const number = document.createElement("th");
    number.scope = "row";
    number.textContent = entry.version === current ? `${entry.version} (current)` : String(entry.version);
    const saved = document.createElement("td");
    saved.textContent = formatTime(entry.createdAt);
    const author = document.createElement("td");
    author.textContent = entry.author ?? "";
    const message = document.createElement("td");
    const notes = [entry.message ?? ""];
    if (entry.deleted) notes.push("(deleted)");
    if (entry.restoredFrom && !entry.message) notes.push(`(restored from version ${entry.restoredFrom})`);
    if (entry.revoked) notes.push(`(revoked by ${entry.revoked.revokedBy}: ${entry.revoked.reason})`);
    message.textContent = notes.filter(Boolean).join(" ");
    // Which environments point at the version. There is one environment for now, so no promote button yet.
    const environments = document.createElement("td");
    environments.className = "environments";
    environments.textContent = (entry.environments ?? []).join(", ");
    const actions = document.createElement("td");
    if (entry.version > 1) {
      const changes = document.createElement("button");
      changes.type = "button";
      changes.textContent = "Changes";
      changes.setAttribute("aria-label", `Changes in version ${entry.version}`);
      changes.addEventListener("click", () => busy(changes, () => showHistoryDiff(entry.version, entry.version - 1)));
      actions.append(changes);
    }
    if (entry.version !== current && !entry.deleted) {
      const restore = document.createElement("button");
      restore.type = "button";
      restore.textContent = "Restore";
      restore.setAttribute("aria-label", `Restore version ${entry.version}`);
      restore.dataset.needs = "write";
      restore.addEventListener("click", () => busy(restore, () => restoreVersion(entry.version)));
      actions.append(" ", restore);
    }
    // A version no environment serves may be revoked (never served by number again); a revoked one given back.
    if (!entry.deleted && (entry.revoked || (entry.environments ?? []).length === 0)) {
      const revoke = document.createElement("button");
      revoke.type = "button";
      revoke.textContent = entry.revoked ? "Un-revoke" : "Revoke";
      revoke.setAttribute("aria-label", `${revoke.textContent} version ${entry.version}`);
      revoke.dataset.needs = "deploy";
      revoke.addEventListener("click", () => busy(revoke, () => toggleRevoked(entry)));
      actions.append(" ", revoke);
    }
    row.append(number, saved, author, message, environments, actions);
    return row;
  });
  ui.historyRows.replaceChildren(...rows);
}

async function showHistoryDiff(version, against) {
  const diff = await api.getDiff(state.account, version, against);
  ui.historyDiffHeading.textContent = `Changes from version ${against} to version ${version}`;
  ui.historyDiffBody.replaceChildren(renderDiff(diff));
  ui.historyDiff.hidden = false;
  ui.historyDiffHeading.focus();
}

async function toggleRevoked(entry) {
  if (entry.revoked) {
    await api.unrevokeVersion(state.account, entry.version);
    announce(`Version ${entry.version} is no longer revoked.`);
  } else {
    const reason = window.prompt(`Why is version ${entry.version} revoked? (shown in the history and the audit log)`);
    if (!reason || !reason.trim()) return;
    await api.revokeVersion(state.account, entry.version, reason);
    announce(`Revoked version ${entry.version}: no client gets it by number any more.`);
  }
  await refreshHistory();
}

async function restoreVersion(version) {
  if (editor.dirty) {
    warn("Save or revert your edits before restoring a version.");
    return;
  }
  try {
    // A deleted layout has no current ETag: its restore needs no precondition.
    const written = await tracked(() => api.restoreVersion(state.account, version, state.layout?.etag));
    if (written.changeRequest) {
      await refreshHistory();
      heldForReview(written, `The restore of version ${version}`);
      return;
    }
    await loadSource();
    await Promise.all([refreshVariant(), refreshHistory(), loadAccounts()]);
    announce(`Restored version ${version} as version ${written.version}.`);
  } catch (error) {
    if (error.status !== 412) throw error;
    await loadSource();
    await refreshHistory();
    warn(`Someone saved a newer version first; it is loaded now (version ${state.layout.version}). Restore again if you still mean to.`);
  }
}

/** Runs the write `work` as `state.pendingWrite` (see there) and records the ETag it answers as the console's own. */
async function tracked(work) {
  const running = work().then((written) => {
    // A change held for review (202) has no ETag yet: its version reaches clients only when it is applied.
    if (written.etag) state.ownETags.add(written.etag);
    return written;
  });
  state.pendingWrite = running.catch(() => undefined);
  try {
    return await running;
  } finally {
    state.pendingWrite = null;
  }
}

// MARK: Editing

function currentSource() {
  return { text: editor.text, contentType: state.layout?.contentType ?? "application/json" };
}

function showProblem(error, what) {
  if (error.status === 422 && String(error.problem.type ?? "").endsWith("incompatible-build")) {
    showGateRefusal(error, what);
    return true;
  }
  if (error.status === 422 || (error.status === 413 && error.errors.length > 0)) {
    const count = error.errors.length;
    editor.showErrors(error.errors, `${count} error${count === 1 ? "" : "s"}: ${what}`);
    warn(`${count} error${count === 1 ? "" : "s"} in the source: ${what}.`);
    return true;
  }
  return false;
}

/** The builds gate refused (422 `incompatible-build`): each tab a live build cannot open, at its line in the editor
 * when the source names it (the server points into the layout as resolved: source-lines.js finds it), with the
 * build named. */
function showGateRefusal(error, what) {
  const { text, contentType } = currentSource();
  const errors = error.errors.map((entry) => ({ ...entry, line: entry.line ?? gateErrorLine(text, contentType, entry) ?? undefined }));
  const builds = [...new Set(errors.filter((entry) => entry.build).map((entry) => `${entry.build.platform} ${entry.build.appVersion}`))];
  const count = errors.length;
  const named = `live build${builds.length === 1 ? "" : "s"} ${builds.join(", ")}`;
  editor.showErrors(errors, `${count} tab${count === 1 ? "" : "s"} that ${named} cannot open: ${what}`);
  warn(`Refused by the builds gate: ${named} could not open ${count === 1 ? "a tab" : `${count} tabs`}; ${what}.`);
}

/** A change to an environment that needs approval was held (202): its content is a draft, and a change request
 * waits for review (the change requests page); clients keep what they get. */
function heldForReview(written, what) {
  const request = written.changeRequest;
  ui.sourceMeta.textContent =
    `held for review: change request ${request.id} (draft version ${request.version ?? "-"}) · clients get version ${state.layout?.version ?? "-"}`;
  announce(`${heldForReviewText(request, what)} Clients still get version ${state.layout?.version ?? "-"}.`);
}

async function checkSource() {
  try {
    await api.checkLayout(state.account, currentSource());
    editor.clearErrors();
    announce("The source compiles.");
  } catch (error) {
    if (!showProblem(error, "the source does not compile")) throw error;
  }
}

async function previewEdits() {
  try {
    const url = await api.previewSource({ ...currentSource(), ...variant() });
    ui.previewFigure.dataset.scheme = variant().scheme;
    editor.clearErrors();
    ui.previewImage.src = url;
    ui.previewImage.alt = `Tab bar of ${state.account} with the unsaved edits (${variantName(variant())})`;
    ui.previewImage.hidden = false;
    ui.previewCaption.textContent = `Unsaved edits · ${variantName(variant())}`;
    announce("The preview shows the unsaved edits.");
  } catch (error) {
    if (!showProblem(error, "nothing to draw")) throw error;
  }
}

/** PUT with `If-Match` the ETag the edits started from (or `etag` given after a conflict). */
async function saveSource(etag = state.layout?.etag) {
  const message = ui.changeMessage.value.trim();
  try {
    const written = await tracked(() => api.putLayout(state.account, { ...currentSource(), etag, message }));
    if (written.changeRequest) {
      editor.markSaved();
      editor.clearErrors();
      ui.changeMessage.value = "";
      await refreshHistory();
      heldForReview(written, "The change");
      return;
    }
    state.layout = { ...state.layout, exists: true, etag: written.etag, version: written.version };
    state.conflict = null;
    editor.markSaved();
    editor.clearErrors();
    ui.conflict.hidden = true;
    ui.remoteChange.hidden = true;
    ui.changeMessage.value = "";
    ui.sourceMeta.textContent = `version ${written.version} · ${state.layout.contentType} · ETag ${written.etag}`;
    ui.accountSummary.textContent = `Version ${written.version}.`;
    await Promise.all([refreshVariant(), refreshHistory(), loadAccounts()]);
    announce(`Saved version ${written.version} of ${state.account}.`);
  } catch (error) {
    if (error.status === 412) {
      await showConflict();
      return;
    }
    if (!showProblem(error, "nothing was saved")) throw error;
  }
}

/** PUT `?publish=false`: the edits stored as a draft version; clients keep the version they get until a rollout
 * (chosen in the rollout panel at once) or a restore moves the pointer to it. */
async function saveDraft() {
  const message = ui.changeMessage.value.trim();
  const etag = state.layout?.etag;
  try {
    const written = await tracked(() => api.putLayout(state.account, { ...currentSource(), etag, message, publish: false }));
    editor.markSaved();
    editor.clearErrors();
    ui.changeMessage.value = "";
    ui.sourceMeta.textContent =
      `draft version ${written.version} (these edits) · clients get version ${state.layout.version} · ETag ${written.etag}`;
    await refreshHistory();
    rollout.choose(written.version);
    const blocked = (written.incompatibleBuilds ?? []).map((build) => `${build.platform} ${build.appVersion}`);
    const gate = blocked.length ? ` Live build${blocked.length === 1 ? "" : "s"} ${blocked.join(", ")} could not open it yet.` : "";
    announce(`Saved draft version ${written.version} of ${state.account}: clients still get version ${state.layout.version}.${gate}`);
  } catch (error) {
    if (error.status === 412) {
      await showConflict();
      return;
    }
    if (!showProblem(error, "nothing was saved")) throw error;
  }
}

/** A save was refused because a newer version exists: show what it changed since the version edited. */
async function showConflict() {
  const base = state.layout;
  const newer = await api.getLayout(state.account);
  state.conflict = newer;
  ui.conflictText.textContent =
    `You edited version ${base.version || "(none)"}, but version ${newer.version} was saved meanwhile. ` +
    "Its changes are listed below; your edits are still in the editor and were not saved.";
  if (base.version > 0) {
    try {
      ui.conflictDiff.replaceChildren(renderDiff(await api.getDiff(state.account, newer.version, base.version)));
    } catch (error) {
      const failed = document.createElement("p");
      failed.textContent = `The diff could not be loaded: ${error.message}`;
      ui.conflictDiff.replaceChildren(failed);
    }
  } else {
    ui.conflictDiff.replaceChildren();
  }
  ui.conflict.hidden = false;
  ui.conflictHeading.focus();
  warn(`Not saved: version ${newer.version} was saved by someone else first.`);
  await refreshHistory();
}

async function discardAndLoad() {
  await loadSource();
  state.conflict = null;
  ui.conflict.hidden = true;
  ui.remoteChange.hidden = true;
  await Promise.all([refreshVariant(), refreshHistory()]);
  announce(`Loaded version ${state.layout.version}; your edits were discarded.`);
  $("source").focus();
}

// MARK: The change feed

function feedItem(event, change) {
  const item = document.createElement("li");
  const time = document.createElement("time");
  time.dateTime = change.at ?? "";
  time.textContent = change.at ? new Date(change.at).toLocaleTimeString() : "";
  item.append(time, " ");
  if (event.type === "layout" && change.account) {
    const open = document.createElement("button");
    open.type = "button";
    open.className = "link";
    open.textContent = change.account;
    open.addEventListener("click", () => openAccount(change.account).catch(fail));
    item.append(open);
  } else if (event.type === "strings") {
    item.append(`strings ${change.locale ?? ""}`);
  } else if (event.type === "promote") {
    const subject = change.account ?? `strings ${change.locale ?? ""}`;
    item.append(`${subject} promoted from ${change.from ?? "?"} to ${change.environment ?? "?"}`);
  } else {
    item.append(event.type);
  }
  const mine = state.ownETags.has(change.etag);
  const what = change.deleted ? `deleted (version ${change.version ?? "?"})` : `→ version ${change.version ?? "?"}`;
  item.append(` ${what} by ${change.author ?? "?"}${mine ? " (this console)" : ""}`);
  item.className = mine ? "mine" : "others";
  item.dataset.account = change.account ?? "";
  item.dataset.version = String(change.version ?? "");
  return item;
}

/** The feed's line for an `event: change-request` (its data the request as `GET /v1/change-requests/{id}` gives it). */
function changeRequestFeedItem(change) {
  const item = document.createElement("li");
  item.className = "change-request-event";
  const time = document.createElement("time");
  const now = new Date();
  time.dateTime = now.toISOString();
  time.textContent = now.toLocaleTimeString();
  const approvals = (change.approvals ?? []).length;
  item.append(
    time,
    ` change request ${change.id ?? "?"} of ${change.account ?? "?"} in ${change.environment ?? "?"}: ${change.state ?? "?"}` +
      ` (${approvals} of ${change.required ?? "?"} approvals) by ${change.author ?? "?"}`,
  );
  item.dataset.account = change.account ?? "";
  item.dataset.state = change.state ?? "";
  return item;
}

async function onFeedEvent(event) {
  await state.pendingWrite;
  if (event.type === "reset") {
    announce("The change feed restarted; reloading.");
    loadAccounts().catch(fail);
    if (state.account && !editor.dirty) discardAndLoad().catch(fail);
    return;
  }
  if (!["layout", "strings", "rollout", "promote", "change-request"].includes(event.type)) return;
  let change;
  try {
    change = JSON.parse(event.data);
  } catch {
    return;
  }
  ui.feedList.prepend(
    event.type === "rollout" ? rolloutFeedItem(change) : event.type === "change-request" ? changeRequestFeedItem(change) : feedItem(event, change),
  );
  while (ui.feedList.children.length > feedLimit) ui.feedList.lastElementChild.remove();
  if (event.type === "rollout") {
    rollout.onEvent(change);
    return;
  }
  if (event.type === "change-request") {
    pages.changes.onEvent(change);
    return;
  }
  if (event.type === "promote") {
    // A pointer moved to a version that exists already: the environments' rows (and what they serve) follow.
    if (change.account && change.account === state.account) refreshHistory().catch(fail);
    if (change.locale && state.account) refreshVariant().catch(fail);
    loadAccounts().catch(fail);
    return;
  }
  if (state.ownETags.has(change.etag)) return;
  loadAccounts().catch(fail);
  if (event.type === "strings" && state.account) {
    refreshVariant().catch(fail);
    return;
  }
  if (change.account !== state.account || change.etag === state.layout?.etag) return;
  if (!editor.dirty && !state.conflict) {
    discardAndLoad()
      .then(() => announce(`${change.author ?? "Someone"} saved version ${change.version} of ${change.account}; it is loaded.`))
      .catch(fail);
    return;
  }
  ui.remoteChangeText.textContent =
    `${change.author ?? "Someone"} saved version ${change.version} while you were editing. ` +
    "Saving your edits now will show what changed.";
  ui.remoteChange.hidden = false;
  refreshVariant().catch(fail);
  refreshHistory().catch(fail);
}

const feedStates = {
  listening: "Listening: changes appear here as they are saved.",
  waiting: "The change feed failed; trying again shortly.",
  refused: "The change feed refused the token.",
  stopped: "Not connected.",
};

const pages = new Pages({ announce, warn, busy });

/** A completion or a promotion moved a pointer (the source, the preview and the history change); a rollback
 * changes what the history lists. Edits in progress stay in the editor. */
async function pointerMoved() {
  if (!editor.dirty && !state.conflict) await loadSource();
  await Promise.all([refreshVariant(), refreshHistory(), loadAccounts()]);
}

const rollout = new RolloutPanel({
  announce,
  warn,
  busy,
  variant,
  currentETag: () => state.layout?.etag ?? null,
  changed: pointerMoved,
  shown: () => builds.update().catch(fail),
});

const builds = new BuildsMatrix({
  busy,
  served: () => ({ account: state.account, exists: Boolean(state.layout?.exists), ...rollout.served() }),
});

const promotion = new PromotionPanel({ announce, busy, changed: pointerMoved });

const feed = new ChangeFeed({
  onEvent: (event) => onFeedEvent(event).catch(fail),
  onState: (name, detail) => {
    ui.feedState.textContent = detail ? `${feedStates[name]} (${detail})` : feedStates[name];
    ui.feedState.dataset.state = name;
  },
});

// MARK: Wiring

ui.signInForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const token = ui.token.value.trim();
  if (!token) {
    warn("Type a token first.");
    ui.token.focus();
    return;
  }
  busy($("sign-in-button"), () => signIn(token));
});
ui.signOut.addEventListener("click", signOut);

let searchTimer = null;
ui.search.addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    resetPaging();
    loadAccounts().catch(fail);
  }, 250);
});
ui.searchForm.addEventListener("submit", (event) => {
  event.preventDefault();
  clearTimeout(searchTimer);
  resetPaging();
  loadAccounts().catch(fail);
});
ui.pageSize.addEventListener("change", () => {
  resetPaging();
  loadAccounts().catch(fail);
});
ui.pageNext.addEventListener("click", () =>
  busy(ui.pageNext, async () => {
    if (!state.next) return;
    state.cursors[state.index + 1] = state.next;
    state.cursors.length = state.index + 2;
    state.index += 1;
    await loadAccounts();
  }),
);
ui.pagePrevious.addEventListener("click", () =>
  busy(ui.pagePrevious, async () => {
    if (state.index === 0) return;
    state.index -= 1;
    await loadAccounts();
  }),
);

ui.variant.addEventListener("submit", (event) => {
  event.preventDefault();
  busy(null, refreshVariant);
});
ui.platform.addEventListener("change", () => busy(null, refreshVariant));
ui.scheme.addEventListener("change", () => busy(null, refreshVariant));

ui.check.addEventListener("click", () => busy(ui.check, checkSource));
ui.previewEdits.addEventListener("click", () => busy(ui.previewEdits, previewEdits));
ui.save.addEventListener("click", () => busy(ui.save, () => saveSource()));
ui.saveDraft.addEventListener("click", () => busy(ui.saveDraft, saveDraft));
ui.revert.addEventListener("click", () => busy(ui.revert, discardAndLoad));
ui.conflictOverwrite.addEventListener("click", () => busy(ui.conflictOverwrite, () => saveSource(state.conflict?.etag)));
ui.conflictDiscard.addEventListener("click", () => busy(ui.conflictDiscard, discardAndLoad));
ui.remoteChangeLoad.addEventListener("click", () => busy(ui.remoteChangeLoad, discardAndLoad));
$("source").addEventListener("keydown", (event) => {
  if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
    event.preventDefault();
    if (!ui.save.disabled) busy(ui.save, () => saveSource());
  }
});

if (api.storedToken()) {
  showWorkspace();
} else {
  ui.token.focus();
}
