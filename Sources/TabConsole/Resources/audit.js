// The audit page (`read`; the entries the token may read): who did what, oldest first, filtered by account and
// actor, a page at a time by following `next`.

import * as access from "./access-api.js";
import { byId, cell, formatTime } from "./dom.js";

export class AuditPage {
  /** @param {{announce: (text: string) => void, busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>}} messages */
  constructor({ announce, busy }) {
    this.announce = announce;
    this.busy = busy;
    this.form = byId("audit-filter");
    this.account = byId("audit-account");
    this.actor = byId("audit-actor");
    this.pageSize = byId("audit-page-size");
    this.rows = byId("audit-rows");
    this.previous = byId("audit-previous");
    this.next = byId("audit-next");
    this.pageNumber = byId("audit-page-number");
    /** `after` cursors of the pages seen so far; `index` is the page shown; `following` the server's `next`. */
    this.cursors = [""];
    this.index = 0;
    this.following = null;
    this.request = 0;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.busy(null, () => this.reset());
    });
    this.pageSize.addEventListener("change", () => this.busy(null, () => this.reset()));
    this.next.addEventListener("click", () =>
      this.busy(this.next, async () => {
        if (!this.following) return;
        this.cursors[this.index + 1] = this.following;
        this.cursors.length = this.index + 2;
        this.index += 1;
        await this.load();
      }),
    );
    this.previous.addEventListener("click", () =>
      this.busy(this.previous, async () => {
        if (this.index === 0) return;
        this.index -= 1;
        await this.load();
      }),
    );
  }

  /** The first page for the filters as they are typed. */
  async reset() {
    this.cursors = [""];
    this.index = 0;
    await this.load();
  }

  async load() {
    const request = ++this.request;
    const page = await access.listAudit({
      after: this.cursors[this.index],
      limit: this.pageSize.value,
      account: this.account.value.trim(),
      actor: this.actor.value.trim(),
    });
    // Pages can be asked for faster than they come: show only the answer to the latest request.
    if (request !== this.request) return;
    const entries = page.entries ?? [];
    this.following = page.next ?? null;
    this.rows.replaceChildren(...entries.map((entry) => this.row(entry)));
    byId("audit-empty").hidden = entries.length > 0;
    this.previous.disabled = this.index === 0;
    this.next.disabled = !this.following;
    this.pageNumber.textContent = `Page ${this.index + 1}`;
  }

  clear() {
    this.rows.replaceChildren();
  }

  row(entry) {
    const row = document.createElement("tr");
    row.dataset.entryId = String(entry.id);
    row.dataset.status = String(entry.status);
    if (entry.status >= 400) row.className = "refused";
    const where = [entry.account, entry.environment, entry.version === undefined || entry.version === null ? null : `v${entry.version}`]
      .filter((part) => part !== null && part !== undefined && part !== "")
      .join(" · ");
    row.append(
      cell(formatTime(entry.at), { header: true }),
      cell(entry.tokenId ? `${entry.actor} (${entry.tokenId})` : entry.actor),
      cell(entry.address),
      cell(`${entry.method} ${entry.path}`),
      cell(entry.action),
      cell(where),
      cell(entry.status),
    );
    return row;
  }
}
