// The console's pages (layouts, change requests, tokens, audit, webhooks) and what the signed-in token may do.
//
// The console uses whatever token is typed in and hides what it cannot do. What it may do is the server's word:
// `whoAmI` (access-api.js) reads `GET /v1/tokens/self` (the token's name, scopes with what they imply, accounts and
// environments). The body then carries `can-write`, `can-deploy`, `can-approve` and `can-admin` classes, and
// console.css hides every `[data-needs~=write]`, `[data-needs~=deploy]`, `[data-needs~=approve]` or
// `[data-needs~=admin]` element the token may not use, including rows drawn later. What depends on the account or
// the author (a change request's buttons) is decided where it is drawn, from `abilities`.

import { whoAmI } from "./access-api.js";
import { AuditPage } from "./audit.js";
import { ChangeRequestsPage } from "./change-requests.js";
import { byId } from "./dom.js";
import { TokensPage } from "./tokens.js";
import { WebhooksPage } from "./webhooks.js";

export class Pages {
  /** @param {{announce: (text: string) => void, warn: (text: string) => void, busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>}} messages */
  constructor(messages) {
    this.busy = messages.busy;
    this.announce = messages.announce;
    this.nav = byId("pages");
    this.who = byId("who");
    this.abilities = Pages.none;
    this.tokens = new TokensPage(messages);
    this.changes = new ChangeRequestsPage({ ...messages, abilities: () => this.abilities });
    this.audit = new AuditPage(messages);
    this.webhooks = new WebhooksPage(messages);
    this.loaders = {
      workspace: null,
      "changes-page": () => this.changes.load(),
      "tokens-page": () => this.tokens.load(),
      "audit-page": () => this.audit.reset(),
      "webhooks-page": () => this.webhooks.load(),
    };
    for (const link of this.nav.querySelectorAll("button[data-page]")) {
      link.addEventListener("click", () => this.busy(null, () => this.show(link.dataset.page)));
    }
  }

  /** No ability: what is assumed until the server says, and after signing out. */
  static none = { name: "", admin: false, write: false, deploy: false, approve: false, accounts: [], environments: [] };

  /** The token's abilities, asked of the server; until they are known, nothing that needs them is shown. */
  async start() {
    this.apply(Pages.none);
    this.nav.hidden = false;
    this.apply(await whoAmI());
  }

  apply(abilities) {
    this.abilities = abilities;
    document.body.classList.toggle("can-write", abilities.write);
    document.body.classList.toggle("can-admin", abilities.admin);
    document.body.classList.toggle("can-deploy", abilities.deploy);
    document.body.classList.toggle("can-approve", abilities.approve);
    this.who.dataset.name = abilities.name;
    const may = ["read", abilities.write && "write", abilities.deploy && "deploy", abilities.approve && "approve"].filter(Boolean);
    this.who.textContent = abilities.admin
      ? "Signed in with an admin token"
      : may.length === 1
        ? "Signed in with a read-only token"
        : `Signed in with a token that may ${may.slice(0, -1).join(", ")} and ${may.at(-1)}`;
  }

  /** Shows page `id` (a section of the page: `workspace`, `tokens-page`, …) and loads what it lists. */
  async show(id) {
    for (const link of this.nav.querySelectorAll("button[data-page]")) {
      if (link.dataset.page === id) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    this.announce("");
    for (const page of Object.keys(this.loaders)) byId(page).hidden = page !== id;
    const heading = byId(id).querySelector("h2");
    if (heading && id !== "workspace") heading.focus();
    await this.loaders[id]?.();
  }

  /** Signing out: back to the layouts, nothing of the other pages left on screen, no ability assumed. */
  stop() {
    this.nav.hidden = true;
    for (const page of ["changes-page", "tokens-page", "audit-page", "webhooks-page"]) byId(page).hidden = true;
    for (const link of this.nav.querySelectorAll("button[data-page]")) {
      if (link.dataset.page === "workspace") link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    this.changes.clear();
    this.tokens.clear();
    this.audit.clear();
    this.webhooks.clear();
    this.apply(Pages.none);
  }
}
