// Promotion between environments (docs/rollouts.md): for each environment that points at
// another version than the next one, a button that first shows the diff the promotion makes (the next one's
// version to this one's), then moves the next one's pointer with `POST …/layout/promote` and `If-Match` its
// version's ETag (`deploy` only: console.css hides the buttons from other tokens). A gradual promotion is a
// rollout: start it in the rollout panel in the next environment.

import { send } from "./api.js";
import { renderDiff } from "./diff.js";
import { button, byId, heldForReviewText } from "./dom.js";

/** The environments' pointers as the versions list gives them, in promotion order as far as it tells it: newest
 * version first (changes enter the first environment), then in the order a version names them. */
export function pointersOf(versions) {
  const pointers = [];
  for (const entry of versions) {
    for (const environment of entry.environments ?? []) pointers.push({ environment, version: entry.version, etag: entry.etag });
  }
  return pointers;
}

export class PromotionPanel {
  /**
   * @param {{announce: (text: string) => void, busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>,
   *   changed: () => Promise<void>}} context `changed` reloads what a promotion moved
   */
  constructor(context) {
    this.context = context;
    this.account = null;
    this.pending = null;
    this.list = byId("promotions");
    this.section = byId("promotion");
    this.heading = byId("promotion-heading");
    this.diff = byId("promotion-diff");
    byId("promotion-confirm").addEventListener("click", (event) =>
      this.context.busy(event.currentTarget, () => this.confirm()),
    );
    byId("promotion-cancel").addEventListener("click", () => this.cancel());
  }

  /** The versions of `account` (newest first): a promote button per pair of neighbours that differ. */
  setVersions(account, versions) {
    if (account !== this.account) this.cancel();
    this.account = account;
    const pointers = pointersOf(versions);
    const buttons = [];
    for (let index = 0; index + 1 < pointers.length; index += 1) {
      const from = pointers[index];
      const to = pointers[index + 1];
      if (from.version === to.version) continue;
      const promote = button(`Promote ${from.environment} → ${to.environment}`, {
        label: `Promote ${from.environment} (version ${from.version}) to ${to.environment} (version ${to.version})`,
      });
      promote.dataset.needs = "deploy";
      promote.dataset.from = from.environment;
      promote.addEventListener("click", () => this.context.busy(promote, () => this.propose(from, to)));
      buttons.push(promote);
    }
    this.list.replaceChildren(...buttons);
  }

  /** Shows what promoting `from` to `to` changes in `to`, with the buttons to do it or not. */
  async propose(from, to) {
    const path = `/v1/accounts/${encodeURIComponent(this.account)}/layout/versions/${from.version}/diff?against=${to.version}`;
    const diff = await (await send(path, { headers: { Accept: "application/json" } })).json();
    this.pending = { account: this.account, from, to };
    this.heading.textContent =
      `Promote ${from.environment} to ${to.environment}: ${to.environment} goes from version ${to.version} to version ${from.version}`;
    this.diff.replaceChildren(renderDiff(diff));
    this.section.hidden = false;
    this.heading.focus();
  }

  async confirm() {
    const pending = this.pending;
    if (!pending) return;
    const { account, from, to } = pending;
    const answer = await send(`/v1/accounts/${encodeURIComponent(account)}/layout/promote`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", "If-Match": to.etag },
      body: JSON.stringify({ from: from.environment, to: to.environment }),
    });
    this.cancel();
    if (answer.status === 202) {
      const held = await answer.json();
      this.context.announce(heldForReviewText(held.changeRequest, `The promotion of ${from.environment} to ${to.environment}`));
      return;
    }
    await this.context.changed();
    this.context.announce(`Promoted ${account}: ${to.environment} points at version ${from.version} now.`);
  }

  cancel() {
    this.pending = null;
    this.section.hidden = true;
    this.diff.replaceChildren();
  }
}
