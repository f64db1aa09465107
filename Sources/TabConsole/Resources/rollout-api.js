// A layout's rollout as the console uses it (contract: docs/rollouts.md). Requests go
// through api.js's `send`, with the token this tab signed in with; every change needs the `deploy` scope.

import { darkOnly, send, sendJSON, svgDataURL } from "./api.js";

/** `…/layout/rollout` + `tail`, in `environment` when one is named (else the server's default: the first). */
function rolloutPath(account, environment, tail = "") {
  const query = environment ? `?environment=${encodeURIComponent(environment)}` : "";
  return `/v1/accounts/${encodeURIComponent(account)}/layout/rollout${tail}${query}`;
}

/**
 * `GET …/layout/rollout`: the account's newest rollout, or null when it never had one (404).
 * @returns {Promise<{id: number, environment: string, version: number, stableVersion: number, percent: number,
 *   steps: Array<{percent: number, hold: string}>, step: number | null, nextStepAt: string | null, state: string,
 *   seed: string, startedAt: string, served: {candidate: number, stable: number}, reason?: string,
 *   guard: {kind: string, maxRatio?: number, maxRate?: number, minInstalls: number, minFailures: number,
 *     action: string} | null,
 *   health?: {[arm: string]: {installs: number, failed: number, byKind: {[kind: string]: number},
 *     byTab: {[tab: string]: number}}}} | null>}
 */
export async function getRollout(account, environment) {
  try {
    return await sendJSON(rolloutPath(account, environment));
  } catch (error) {
    if (error.status === 404) return null;
    throw error;
  }
}

/**
 * `POST …/layout/rollout` with `If-Match: etag` (the ETag of the version the environment points at): `plan` is
 * `{version, percent}` or `{version, steps: [{percent, hold}]}`.
 */
export function startRollout(account, environment, plan, etag) {
  return sendJSON(rolloutPath(account, environment), { method: "POST", body: plan, headers: etag ? { "If-Match": etag } : {} });
}

/** `PATCH …/layout/rollout` `{percent}` (upward only) or `{paused}`. */
export function patchRollout(account, environment, change) {
  return sendJSON(rolloutPath(account, environment), { method: "PATCH", body: change });
}

/** `POST …/layout/rollout/complete` (no body): the candidate becomes the stable version for everyone. */
export function completeRollout(account, environment) {
  return sendJSON(rolloutPath(account, environment, "/complete"), { method: "POST" });
}

/** `POST …/layout/rollout/rollback` `{reason}`: everyone gets the stable version at once. */
export function rollBack(account, environment, reason) {
  return sendJSON(rolloutPath(account, environment, "/rollback"), { method: "POST", body: { reason } });
}

/**
 * Version `version` of the layout drawn by the server: its stored source (`GET …/layout/versions/{n}`, byte for
 * byte with its type) sent to `POST /v1/preview`. This draws each arm without asking the client plane as an
 * install would, which would count as an answer served in the rollout.
 */
export async function drawVersion(account, version, { locale, platform, scheme }) {
  const source = await send(`/v1/accounts/${encodeURIComponent(account)}/layout/versions/${version}`);
  const query = new URLSearchParams();
  if (locale) query.set("locale", locale);
  if (platform) query.set("platform", platform);
  if (darkOnly(scheme)) query.set("scheme", "dark");
  const text = query.toString();
  const drawn = await send(`/v1/preview${text ? `?${text}` : ""}`, {
    method: "POST",
    headers: { "Content-Type": source.headers.get("Content-Type") || "application/json", Accept: "image/svg+xml" },
    body: await source.arrayBuffer(),
  });
  return svgDataURL(drawn);
}
