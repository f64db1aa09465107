// Tokens, audit and webhooks as the console uses them (contract: docs/security.md, "Scoped API tokens", and
// docs/webhooks.md). Requests go through api.js's `send`, with the token this tab signed in with.

import { queryString, sendJSON } from "./api.js";

/** `GET /v1/tokens` (`admin`) → `[{id, name, scopes, accounts, environments, expiresAt, createdAt, createdBy, lastUsedAt, revokedAt}]`. */
export async function listTokens() {
  return (await sendJSON("/v1/tokens")).tokens ?? [];
}

/** `POST /v1/tokens` `{name, scopes, accounts?, environments?, expiresAt?}` → the token with its secret in `token` (shown once). */
export function createToken(spec) {
  return sendJSON("/v1/tokens", { method: "POST", body: spec });
}

/** `DELETE /v1/tokens/{id}`: revoked on every replica within a second. */
export async function revokeToken(id) {
  await sendJSON(`/v1/tokens/${encodeURIComponent(id)}`, { method: "DELETE" });
}

/** `POST /v1/tokens/{id}/rotate` `{overlap?}` → the token with its new secret; the old one stays valid for `overlap`. */
export function rotateToken(id, overlap) {
  return sendJSON(`/v1/tokens/${encodeURIComponent(id)}/rotate`, { method: "POST", body: overlap ? { overlap } : {} });
}

/** `GET /v1/audit?after=&limit=&account=&actor=` → `{entries: [...], next}`, oldest first. */
export function listAudit({ after, limit, account, actor }) {
  return sendJSON(`/v1/audit${queryString({ after, limit, account, actor })}`);
}

/** `GET /v1/webhooks` (`admin`) → `[{id, url, events, accounts, active, createdAt}]`. */
export async function listWebhooks() {
  return (await sendJSON("/v1/webhooks")).webhooks ?? [];
}

/** `GET /v1/webhooks/{id}/deliveries?after=&limit=` → `{deliveries: [...], next}`. */
export function listDeliveries(id, { after, limit }) {
  return sendJSON(`/v1/webhooks/${encodeURIComponent(id)}/deliveries${queryString({ after, limit })}`);
}

/** `POST /v1/webhooks/{id}/deliveries/{d}/redeliver`: sends that delivery again now. */
export async function redeliver(id, delivery) {
  await sendJSON(`/v1/webhooks/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(delivery)}/redeliver`, { method: "POST" });
}

/**
 * What the signed-in token may do, as the server says (`GET /v1/tokens/self`): its name (the author of its changes),
 * its scopes with the ones they imply, and the accounts and environments it reaches. Asking costs nothing in the
 * audit log (nothing is tried and refused).
 * @returns {Promise<{name: string, admin: boolean, write: boolean, deploy: boolean, approve: boolean,
 *   accounts: string[], environments: string[] | null}>}
 */
export async function whoAmI() {
  const token = await sendJSON("/v1/tokens/self");
  const implied = new Set(token.implied ?? []);
  return {
    name: String(token.name ?? ""),
    admin: implied.has("admin"),
    write: implied.has("write"),
    deploy: implied.has("deploy"),
    approve: implied.has("approve"),
    accounts: Array.isArray(token.accounts) ? token.accounts : ["*"],
    environments: Array.isArray(token.environments) ? token.environments : null,
  };
}

/**
 * Whether `abilities` (whoAmI's) reach `account` in `environment`: an account glob's only wildcard is `*` (any run
 * of characters; docs/security.md), and `environments` null is every one. `account` null is what belongs to no
 * account (a strings table), which only `*` reaches.
 */
export function reaches(abilities, account, environment) {
  const environments = abilities.environments;
  if (environments && environment && !environments.includes(environment)) return false;
  if (account === null) return (abilities.accounts ?? []).includes("*");
  return (abilities.accounts ?? []).some((glob) => {
    const pattern = glob
      .split("*")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*");
    return new RegExp(`^${pattern}$`).test(account ?? "");
  });
}
