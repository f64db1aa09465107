// The TabServer HTTP API as the console uses it (contract: README and docs/).
// The admin token lives in sessionStorage (this tab only) and travels as `Authorization: Bearer`.

const tokenKey = "tabserver.adminToken";

/** A refused or failed request: the HTTP status and the RFC 9457 problem the server sent, if any. */
export class ApiError extends Error {
  /**
   * @param {number} status HTTP status (0 when the server could not be reached)
   * @param {{title?: string, detail?: string, errors?: Array<{pointer: string, line?: number, message: string}>}} problem
   * @param {Headers} headers the response's headers
   */
  constructor(status, problem, headers) {
    const detail = problem.detail || problem.title || "no details";
    super(status === 0 ? detail : `${status} ${problem.title || "error"}: ${detail}`);
    this.name = "ApiError";
    this.status = status;
    this.problem = problem;
    this.headers = headers;
  }

  /** The `{pointer, line?, message}` list of a 422. */
  get errors() {
    return Array.isArray(this.problem.errors) ? this.problem.errors : [];
  }
}

/** The token this tab signed in with, or null. */
export function storedToken() {
  return sessionStorage.getItem(tokenKey);
}

/** Keeps `token` for this tab. */
export function storeToken(token) {
  sessionStorage.setItem(tokenKey, token);
}

/** Forgets the token. */
export function forgetToken() {
  sessionStorage.removeItem(tokenKey);
}

/** `/v1/accounts/{account}` + `tail`. */
function accountPath(account, tail) {
  return `/v1/accounts/${encodeURIComponent(account)}/${tail}`;
}

/** `scheme=dark` is asked for; light is the drawings' default, so it is left out (the URL stays the one a light
 * preview always had, and its cached answer with it). */
export function darkOnly(scheme) {
  return scheme === "dark" ? "dark" : undefined;
}

/** `?a=b&…` without empty values. */
export function queryString(values) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== null && value !== "") query.set(name, String(value));
  }
  const text = query.toString();
  return text ? `?${text}` : "";
}

/**
 * One request; resolves to the Response when its status is 2xx, else rejects with ApiError.
 * @param {string} path
 * @param {{method?: string, headers?: Record<string, string>, body?: BodyInit, admin?: boolean, signal?: AbortSignal}} options
 */
export async function send(path, { method = "GET", headers = {}, body, admin = true, signal } = {}) {
  const fields = new Headers(headers);
  if (admin) fields.set("Authorization", `Bearer ${storedToken() ?? ""}`);
  let response;
  try {
    response = await fetch(path, { method, headers: fields, body, cache: "no-store", credentials: "omit", signal });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, { title: "Unreachable", detail: `the server did not answer (${error.message})` }, new Headers());
  }
  if (response.ok) return response;
  let problem = {};
  const type = response.headers.get("Content-Type") || "";
  if (type.includes("json")) {
    try {
      problem = await response.json();
    } catch {
      problem = {};
    }
  } else {
    problem = { detail: (await response.text()).slice(0, 500) };
  }
  throw new ApiError(response.status, problem, response.headers);
}

/**
 * A JSON request through `send`: `body`, when given, sent as JSON; resolves to the answer's JSON (null for 204).
 * @param {string} path
 * @param {{method?: string, body?: unknown, headers?: Record<string, string>}} options
 */
export async function sendJSON(path, { method = "GET", body, headers = {} } = {}) {
  const fields = { Accept: "application/json", ...headers };
  if (body !== undefined) fields["Content-Type"] = "application/json";
  const response = await send(path, { method, headers: fields, body: body === undefined ? undefined : JSON.stringify(body) });
  return response.status === 204 ? null : response.json();
}

async function json(path, options) {
  return (await send(path, { ...options, headers: { Accept: "application/json", ...(options?.headers ?? {}) } })).json();
}

/** `GET /v1/accounts?after=&limit=` → `{accounts: [{account, version, etag, updatedAt}], next}`. */
export function listAccounts({ after, limit }) {
  return json(`/v1/accounts${queryString({ after, limit })}`);
}

/**
 * `GET …/layout`: the current source. A binary plist (`bplist00`) comes back with `binary: true` and no text.
 * @returns {Promise<{text: string | null, binary: boolean, contentType: string, etag: string, version: number}>}
 */
export async function getLayout(account) {
  const response = await send(accountPath(account, "layout"));
  const bytes = new Uint8Array(await response.arrayBuffer());
  const binary = new TextDecoder().decode(bytes.subarray(0, 8)) === "bplist00";
  return {
    text: binary ? null : new TextDecoder().decode(bytes),
    binary,
    contentType: response.headers.get("Content-Type") || "application/json",
    etag: response.headers.get("ETag"),
    version: Number(response.headers.get("Layout-Version")),
  };
}

/**
 * `PUT …/layout` with `If-Match: etag` (or `If-None-Match: *` to create); `publish: false` stores a draft
 * (`?publish=false`: a version that clients do not get until a rollout or a restore moves the pointer to it).
 * @returns {Promise<{account: string, version: number, etag: string}>}
 */
export function putLayout(account, { text, contentType, etag, message, publish = true }) {
  const headers = { "Content-Type": contentType, Accept: "application/json" };
  if (etag) headers["If-Match"] = etag;
  else headers["If-None-Match"] = "*";
  if (message) headers["Change-Message"] = message;
  const path = accountPath(account, publish ? "layout" : "layout?publish=false");
  return json(path, { method: "PUT", headers, body: text });
}

/** `PUT …/layout?dryRun=true`: compiles and stores nothing. */
export function checkLayout(account, { text, contentType }) {
  return json(accountPath(account, "layout?dryRun=true"), {
    method: "PUT",
    headers: { "Content-Type": contentType },
    body: text,
  });
}

/** `GET …/tabs?locale=&platform=` (client plane): the compiled JSON as text, with its ETag and language. */
export async function getCompiled(account, { locale, platform }) {
  const response = await send(accountPath(account, `tabs${queryString({ locale, platform })}`), {
    admin: false,
    headers: { Accept: "application/json" },
  });
  return {
    text: await response.text(),
    etag: response.headers.get("ETag"),
    language: response.headers.get("Content-Language"),
  };
}

/** `GET …/tabs/bundle` (client plane): the locales the layout has, or [] when the answer has none. */
export async function getLocales(account) {
  const bundle = await json(accountPath(account, "tabs/bundle"), { admin: false });
  const locales = (bundle.representations ?? []).map((entry) => entry.locale).filter(Boolean);
  return [...new Set(locales)];
}

/** Reads an SVG answer as a `data:` URL (the page's CSP allows `img-src 'self' data:`, not `blob:`). */
export async function svgDataURL(response) {
  const blob = await response.blob();
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(new Blob([blob], { type: "image/svg+xml" }));
  });
}

/** `GET …/tabs/preview.svg?locale=&platform=&scheme=` (client plane) as a `data:` URL and its ETag; `scheme` is
 * "dark" for the layout's dark colours (docs/layout-format.md), else light. */
export async function getPreview(account, { locale, platform, scheme }) {
  const response = await send(accountPath(account, `tabs/preview.svg${queryString({ locale, platform, scheme: darkOnly(scheme) })}`), {
    admin: false,
    headers: { Accept: "image/svg+xml" },
  });
  const etag = response.headers.get("ETag");
  return { url: await svgDataURL(response), etag };
}

/** `POST /v1/preview?locale=&platform=&scheme=`: an unsaved source drawn, as a `data:` URL. */
export async function previewSource({ text, contentType, locale, platform, scheme }) {
  const response = await send(`/v1/preview${queryString({ locale, platform, scheme: darkOnly(scheme) })}`, {
    method: "POST",
    headers: { "Content-Type": contentType, Accept: "image/svg+xml" },
    body: text,
  });
  return svgDataURL(response);
}

/**
 * `GET …/layout/versions` → `[{version, etag, createdAt, author?, message?, restoredFrom?, deleted, environments,
 * revoked?: {reason, revokedAt, revokedBy}}]`,
 * newest first; `environments` names the environments that point at the version now (none: a draft or an old one).
 */
export async function listVersions(account) {
  return (await json(accountPath(account, "layout/versions"))).versions ?? [];
}

/** `GET …/layout/versions/{n}/diff?against=m` → `{account, from, to, changes: [{op, tab?, pointer, from?, to?}]}`. */
export function getDiff(account, version, against) {
  return json(accountPath(account, `layout/versions/${version}/diff${queryString({ against })}`));
}

/** `POST …/layout/versions/{n}/restore` with `If-Match: etag` (none when the layout was deleted). */
export function restoreVersion(account, version, etag) {
  return json(accountPath(account, `layout/versions/${version}/restore`), {
    method: "POST",
    headers: etag ? { "If-Match": etag } : {},
  });
}

/** `POST …/layout/versions/{n}/revoke` with `{reason}`: withdrawn in every environment (409 while one serves it). */
export function revokeVersion(account, version, reason) {
  return json(accountPath(account, `layout/versions/${version}/revoke`), {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ reason }),
  });
}

/** `DELETE …/layout/versions/{n}/revoke`: the version is served by number again. */
export function unrevokeVersion(account, version) {
  return json(accountPath(account, `layout/versions/${version}/revoke`), { method: "DELETE" });
}

/** `GET /v1/events` (text/event-stream), resuming after `lastEventId` when given. */
export function openEvents({ lastEventId, signal }) {
  const headers = { Accept: "text/event-stream" };
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  return send("/v1/events", { headers, signal });
}
