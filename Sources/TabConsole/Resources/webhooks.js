// The webhooks page (`admin`): each webhook and its recent deliveries, with redelivery. A server without the
// webhook routes (404 on `GET /v1/webhooks`) is said to have none yet.

import * as access from "./access-api.js";
import { button, byId, cell, formatTime, joined } from "./dom.js";

const deliveriesShown = 50;

export class WebhooksPage {
  /** @param {{announce: (text: string) => void, busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>}} messages */
  constructor({ announce, busy }) {
    this.announce = announce;
    this.busy = busy;
    this.rows = byId("webhook-rows");
    this.table = byId("webhook-table");
    this.summary = byId("webhook-summary");
    this.deliveries = byId("deliveries");
    this.deliveriesHeading = byId("deliveries-heading");
    this.deliveryRows = byId("delivery-rows");
    this.more = byId("deliveries-more");
    /** The webhook whose deliveries are shown, and the cursor of the page after the last one shown. */
    this.open = null;
    this.following = null;
    byId("webhook-reload").addEventListener("click", (event) => this.busy(event.currentTarget, () => this.load()));
    this.more.addEventListener("click", () => this.busy(this.more, () => this.loadDeliveries({ append: true })));
  }

  async load() {
    let webhooks;
    try {
      webhooks = await access.listWebhooks();
    } catch (error) {
      if (error.status !== 404) throw error;
      this.table.hidden = true;
      this.deliveries.hidden = true;
      this.summary.textContent = "This server has no webhooks yet (it does not have the webhook routes).";
      return;
    }
    this.table.hidden = webhooks.length === 0;
    this.summary.textContent =
      webhooks.length === 0
        ? "No webhook is registered. Make one with POST /v1/webhooks (see docs/webhooks.md)."
        : `${webhooks.length} webhook${webhooks.length === 1 ? "" : "s"}.`;
    this.rows.replaceChildren(...webhooks.map((webhook) => this.row(webhook)));
    if (this.open && !webhooks.some((webhook) => webhook.id === this.open.id)) this.deliveries.hidden = true;
  }

  clear() {
    this.rows.replaceChildren();
    this.deliveryRows.replaceChildren();
    this.deliveries.hidden = true;
    this.open = null;
  }

  row(webhook) {
    const row = document.createElement("tr");
    row.dataset.webhookId = webhook.id;
    const url = cell(webhook.url, { header: true });
    url.className = "wrap";
    const actions = document.createElement("td");
    const show = button("Deliveries", { label: `Deliveries of ${webhook.url}` });
    show.addEventListener("click", () =>
      this.busy(show, async () => {
        this.open = webhook;
        await this.loadDeliveries({ append: false });
        this.deliveries.hidden = false;
        this.deliveriesHeading.focus();
      }),
    );
    actions.append(show);
    row.append(
      url,
      cell(joined(webhook.events, "")),
      cell(joined(webhook.accounts, "*")),
      cell(webhook.active ? "active" : "disabled"),
      cell(formatTime(webhook.createdAt)),
      actions,
    );
    return row;
  }

  async loadDeliveries({ append }) {
    const webhook = this.open;
    if (!webhook) return;
    const page = await access.listDeliveries(webhook.id, { after: append ? this.following : "", limit: deliveriesShown });
    if (webhook !== this.open) return;
    const rows = (page.deliveries ?? []).map((delivery) => this.deliveryRow(webhook, delivery));
    if (append) this.deliveryRows.append(...rows);
    else this.deliveryRows.replaceChildren(...rows);
    this.following = page.next ?? null;
    this.more.hidden = !this.following;
    this.deliveriesHeading.textContent = `Deliveries to ${webhook.url}`;
    byId("deliveries-empty").hidden = this.deliveryRows.children.length > 0;
  }

  deliveryRow(webhook, delivery) {
    const row = document.createElement("tr");
    row.dataset.deliveryId = String(delivery.id);
    row.dataset.state = String(delivery.state);
    const answer = delivery.lastStatus ? String(delivery.lastStatus) : "";
    const actions = document.createElement("td");
    const again = button("Redeliver", { label: `Redeliver ${delivery.id}` });
    again.addEventListener("click", () =>
      this.busy(again, async () => {
        await access.redeliver(webhook.id, delivery.id);
        this.announce(`Delivery ${delivery.id} is sent again now.`);
        await this.loadDeliveries({ append: false });
      }),
    );
    actions.append(again);
    row.append(
      cell(formatTime(delivery.at), { header: true }),
      cell(delivery.type),
      cell(delivery.state),
      cell(delivery.attempts),
      cell([answer, delivery.lastError].filter(Boolean).join(" · ")),
      cell(delivery.state === "pending" ? formatTime(delivery.nextAttemptAt) : ""),
      actions,
    );
    return row;
  }
}
