// Change requests and stored versions drawn, as the console uses them (contract: docs/change-requests.md).
// Requests go through api.js's `send`, with the token this tab signed in with.

import { send, sendJSON } from "./api.js";

const requestPath = (id, step = "") => `/v1/change-requests/${encodeURIComponent(id)}${step}`;

/**
 * `GET /v1/change-requests?state=` (those the token may read), oldest first: `[{id, state, author, createdAt,
 * environment, account, action, version?, approvals: [{by, at}], required, applyAt?, reason?}]`.
 */
export async function listChangeRequests(state) {
  return (await sendJSON(`/v1/change-requests?state=${encodeURIComponent(state)}`)).changeRequests ?? [];
}

/** `POST …/{id}/approve` (`approve`; never by its author): the request as it is now. */
export function approve(id) {
  return sendJSON(requestPath(id, "/approve"), { method: "POST", body: {} });
}

/** `POST …/{id}/reject` `{reason}` (`approve`). */
export function reject(id, reason) {
  return sendJSON(requestPath(id, "/reject"), { method: "POST", body: { reason } });
}

/** `POST …/{id}/cancel` (its author or an admin). */
export function cancel(id) {
  return sendJSON(requestPath(id, "/cancel"), { method: "POST" });
}

/** `POST …/{id}/apply` (`write`; once approved): runs the change against the environment as it is now. */
export function apply(id) {
  return sendJSON(requestPath(id, "/apply"), { method: "POST" });
}

/** `GET …/layout/versions` of `account` → `[{version, environments, …}]`, newest first; [] when it has none (404). */
export async function versionsOf(account) {
  try {
    return (await sendJSON(`/v1/accounts/${encodeURIComponent(account)}/layout/versions`)).versions ?? [];
  } catch (error) {
    if (error.status === 404) return [];
    throw error;
  }
}

/** `GET …/layout/versions/{n}`: the stored source as text with its media type. */
export async function versionSource(account, version) {
  const response = await send(`/v1/accounts/${encodeURIComponent(account)}/layout/versions/${version}`);
  return { text: await response.text(), contentType: response.headers.get("Content-Type") || "" };
}

/**
 * Version `version` of `account` drawn by the server (`GET …/layout/versions/{n}/preview.svg`, a draft too),
 * resolved in `environment`, as its SVG text and a `data:` URL (the page's CSP allows `img-src 'self' data:`).
 */
export async function drawVersion(account, version, { locale, platform, environment }) {
  const query = new URLSearchParams();
  if (locale) query.set("locale", locale);
  if (platform) query.set("platform", platform);
  if (environment) query.set("environment", environment);
  const text = query.toString();
  const path = `/v1/accounts/${encodeURIComponent(account)}/layout/versions/${version}/preview.svg${text ? `?${text}` : ""}`;
  const svg = await (await send(path, { headers: { Accept: "image/svg+xml" } })).text();
  const bytes = new TextEncoder().encode(svg);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return { svg, url: `data:image/svg+xml;base64,${btoa(binary)}` };
}
