// The tokens page (`admin`): the list with last use, a form that makes a token and shows its secret once with a
// copy button, and revoke and rotate (with an overlap) on each row.

import * as access from "./access-api.js";
import { button, byId, cell, formatTime, joined, problemItems } from "./dom.js";

/** Splits "jack, shop-*" into ["jack", "shop-*"]. */
function list(text) {
  return text
    .split(/[\s,]+/)
    .map((part) => part.trim())
    .filter(Boolean);
}

export class TokensPage {
  /** @param {{announce: (text: string) => void, warn: (text: string) => void, busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>}} messages */
  constructor({ announce, warn, busy }) {
    this.announce = announce;
    this.warn = warn;
    this.busy = busy;
    this.form = byId("token-form");
    this.errors = byId("token-errors");
    this.errorList = byId("token-error-list");
    this.rows = byId("token-rows");
    this.secretBox = byId("token-secret");
    this.secretText = byId("token-secret-value");
    this.secretHeading = byId("token-secret-heading");
    this.overlap = byId("token-overlap");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.busy(byId("token-create"), () => this.create());
    });
    byId("token-secret-copy").addEventListener("click", () => this.copySecret());
    byId("token-secret-done").addEventListener("click", () => this.hideSecret());
    byId("token-reload").addEventListener("click", (event) => this.busy(event.currentTarget, () => this.load()));
  }

  /** Shows the page's current list. */
  async load() {
    const tokens = await access.listTokens();
    this.rows.replaceChildren(...tokens.map((token) => this.row(token)));
    byId("token-empty").hidden = tokens.length > 0;
  }

  /** Forgets what the page showed (signing out): the list and any secret still on screen. */
  clear() {
    this.rows.replaceChildren();
    this.hideSecret();
    this.errors.hidden = true;
  }

  row(token) {
    const row = document.createElement("tr");
    row.dataset.tokenId = token.id;
    row.dataset.name = token.name;
    const expired = token.expiresAt && new Date(token.expiresAt) <= new Date();
    const state = token.revokedAt ? `revoked ${formatTime(token.revokedAt)}` : expired ? "expired" : "active";
    row.dataset.state = token.revokedAt ? "revoked" : expired ? "expired" : "active";
    row.append(
      cell(token.name, { header: true }),
      cell(joined(token.scopes, "")),
      cell(joined(token.accounts, "*")),
      cell(joined(token.environments, "all")),
      cell(`${formatTime(token.createdAt)}${token.createdBy ? ` by ${token.createdBy}` : ""}`),
      cell(formatTime(token.expiresAt, "never")),
      cell(formatTime(token.lastUsedAt, "never")),
      cell(state),
    );
    const actions = document.createElement("td");
    if (row.dataset.state === "active") {
      const rotate = button("Rotate", { label: `Rotate ${token.name}` });
      rotate.addEventListener("click", () => this.busy(rotate, () => this.rotate(token)));
      const revoke = button("Revoke", { label: `Revoke ${token.name}`, className: "danger" });
      revoke.addEventListener("click", () => this.busy(revoke, () => this.revoke(token)));
      actions.append(rotate, " ", revoke);
    }
    row.append(actions);
    return row;
  }

  /** The form as `POST /v1/tokens`'s body; empty accounts mean all (`*`), empty environments all. */
  spec() {
    const data = new FormData(this.form);
    const spec = { name: String(data.get("name") ?? "").trim(), scopes: data.getAll("scopes").map(String) };
    const accounts = list(String(data.get("accounts") ?? ""));
    if (accounts.length > 0) spec.accounts = accounts;
    const environments = list(String(data.get("environments") ?? ""));
    if (environments.length > 0) spec.environments = environments;
    const expires = String(data.get("expires") ?? "");
    // datetime-local is the browser's local time; the server wants RFC 3339 (toISOString is UTC, with a Z).
    if (expires) spec.expiresAt = new Date(expires).toISOString();
    return spec;
  }

  async create() {
    const spec = this.spec();
    try {
      const made = await access.createToken(spec);
      this.errors.hidden = true;
      this.form.reset();
      this.showSecret(made, `Token ${made.name} was made`);
      await this.load();
    } catch (error) {
      if (error.status !== 422 && error.status !== 400) throw error;
      this.errorList.replaceChildren(...problemItems(error.errors.length ? error.errors : [{ message: error.message }]));
      this.errors.hidden = false;
      byId("token-errors-heading").focus();
      this.warn(`The token was not made: ${error.problem.detail ?? error.message}`);
    }
  }

  async rotate(token) {
    const overlap = this.overlap.value;
    const rotated = await access.rotateToken(token.id, overlap);
    const kept = overlap ? `the old secret stays valid for ${this.overlap.selectedOptions[0].textContent}` : "the old secret no longer works";
    this.showSecret(rotated, `Token ${rotated.name} has a new secret; ${kept}`);
    await this.load();
  }

  async revoke(token) {
    if (!window.confirm(`Revoke ${token.name}? Every request with it will be refused (401).`)) return;
    await access.revokeToken(token.id);
    await this.load();
    this.announce(`Revoked ${token.name}.`);
  }

  /** The secret, shown this once: it is not kept anywhere but this element until "Done". */
  showSecret(token, what) {
    this.secretText.textContent = token.token;
    this.secretHeading.textContent = `${what}. Copy its secret now: it is not shown again.`;
    this.secretBox.hidden = false;
    this.secretHeading.focus();
    this.announce(`${what}.`);
  }

  hideSecret() {
    this.secretText.textContent = "";
    this.secretBox.hidden = true;
  }

  /** Copies the secret with the Clipboard API, else by selecting it (execCommand), else asks to copy it by hand. */
  async copySecret() {
    const secret = this.secretText.textContent;
    try {
      await navigator.clipboard.writeText(secret);
      this.announce("The secret was copied.");
      return;
    } catch {
      // Not allowed here (an insecure origin, or no permission): fall back to a selection.
    }
    const range = document.createRange();
    range.selectNodeContents(this.secretText);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    if (document.execCommand("copy")) this.announce("The secret was copied.");
    else this.warn("The browser did not let the console copy: the secret is selected, copy it with Ctrl+C.");
  }
}
