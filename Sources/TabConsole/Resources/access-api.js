// Tokens, audit and webhooks as the console uses them (contract: docs/security.md, "Scoped API tokens", and
// docs/webhooks.md). Requests go through api.js's `send`, with the token this tab signed in with.

import { send } from "./api.js";

/** `?a=b&…` without empty values. */
function queryString(values) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== null && value !== "") query.set(name, String(value));
  }
  const text = query.toString();
  return text ? `?${text}` : "";
}

async function json(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await send(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return response.status === 204 ? null : response.json();
}

/** `GET /v1/tokens` (`admin`) → `[{id, name, scopes, accounts, environments, expiresAt, createdAt, createdBy, lastUsedAt, revokedAt}]`. */
export async function listTokens() {
  return (await json("/v1/tokens")).tokens ?? [];
}

/** `POST /v1/tokens` `{name, scopes, accounts?, environments?, expiresAt?}` → the token with its secret in `token` (shown once). */
export function createToken(spec) {
  return json("/v1/tokens", { method: "POST", body: spec });
}

/** `DELETE /v1/tokens/{id}`: revoked on every replica within a second. */
export async function revokeToken(id) {
  await json(`/v1/tokens/${encodeURIComponent(id)}`, { method: "DELETE" });
}

/** `POST /v1/tokens/{id}/rotate` `{overlap?}` → the token with its new secret; the old one stays valid for `overlap`. */
export function rotateToken(id, overlap) {
  return json(`/v1/tokens/${encodeURIComponent(id)}/rotate`, { method: "POST", body: overlap ? { overlap } : {} });
}

/** `GET /v1/audit?after=&limit=&account=&actor=` → `{entries: [...], next}`, oldest first. */
export function listAudit({ after, limit, account, actor }) {
  return json(`/v1/audit${queryString({ after, limit, account, actor })}`);
}

/** `GET /v1/webhooks` (`admin`) → `[{id, url, events, accounts, active, createdAt}]`. */
export async function listWebhooks() {
  return (await json("/v1/webhooks")).webhooks ?? [];
}

/** `GET /v1/webhooks/{id}/deliveries?after=&limit=` → `{deliveries: [...], next}`. */
export function listDeliveries(id, { after, limit }) {
  return json(`/v1/webhooks/${encodeURIComponent(id)}/deliveries${queryString({ after, limit })}`);
}

/** `POST /v1/webhooks/{id}/deliveries/{d}/redeliver`: sends that delivery again now. */
export async function redeliver(id, delivery) {
  await json(`/v1/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(delivery)}/redeliver`, { method: "POST" });
}

/**
 * What the signed-in token may do, learnt from the server's answers (there is no "who am I" route):
 * `admin` when `GET /v1/tokens` answers 200 (403 means it may not); `write` when `POST /v1/validate` with an
 * empty body is refused for its body (400, 415, 422…) rather than for its scope (403); `deploy` likewise with
 * `POST /v1/alerts` (an empty body is not Alertmanager's payload: 422, nothing rolled back). Neither stores
 * anything; a refused probe (403) is written to the audit log like any refused request.
 * @returns {Promise<{admin: boolean, write: boolean, deploy: boolean}>}
 */
export async function probeAbilities() {
  const admin = await allowedBeyondScope(() => send("/v1/tokens", { headers: { Accept: "application/json" } }));
  if (admin) return { admin: true, write: true, deploy: true };
  const emptyPost = (path) => () => send(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: "" });
  const [write, deploy] = await Promise.all([
    allowedBeyondScope(emptyPost("/v1/validate")),
    allowedBeyondScope(emptyPost("/v1/alerts")),
  ]);
  return { admin: false, write, deploy };
}

/** False when `request` is refused with 403; any other refusal is not about the scope. 401 and unreachable are passed on. */
async function allowedBeyondScope(request) {
  try {
    await request();
    return true;
  } catch (error) {
    if (error.status === 403) return false;
    if (error.status === 0 || error.status === 401) throw error;
    return true;
  }
}
