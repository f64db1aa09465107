// Small DOM helpers the tokens, audit and webhooks pages share. Every server value reaches the page as text
// (textContent, never innerHTML), as everywhere in the console.

/** The element with `id`; a missing one is a bug in the page, said at once. */
export function byId(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "short", timeStyle: "medium" });

/** An RFC 3339 time as local text; null or empty as `empty`. */
export function formatTime(text, empty = "") {
  if (text === null || text === undefined || text === "") return empty;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? String(text) : timeFormat.format(date);
}

/** A table cell (`th` with `scope="row"` when `header`) holding `text`. */
export function cell(text, { header = false } = {}) {
  const element = document.createElement(header ? "th" : "td");
  if (header) element.scope = "row";
  element.textContent = text === null || text === undefined ? "" : String(text);
  return element;
}

/** A button whose accessible name is `label` (the visible text when not given). */
export function button(text, { label, className } = {}) {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = text;
  if (label) element.setAttribute("aria-label", label);
  if (className) element.className = className;
  return element;
}

/** `list` joined for a cell, or `empty` when there is none. */
export function joined(list, empty) {
  return Array.isArray(list) && list.length > 0 ? list.join(", ") : empty;
}

/**
 * What the console says when a change is held for review (202 in an environment that needs approval,
 * docs/change-requests.md): `what` is waiting as change request `request` (the Change requests page lists it).
 */
export function heldForReviewText(request, what) {
  const approvals = `${request.required} approval${request.required === 1 ? "" : "s"}`;
  return (
    `${what} is held for review: change request ${request.id} in ${request.environment} waits for ${approvals} ` +
    "(Change requests page); nothing changes for clients until it is applied."
  );
}

/** Runs `tasks` (functions returning promises), at most `width` at a time; their results in order. */
export async function limited(tasks, width) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, worker));
  return results;
}

/** A 422's `{pointer, message}` list as list items (text only). */
export function problemItems(errors) {
  return errors.map((error) => {
    const item = document.createElement("li");
    item.textContent = error.pointer ? `${error.pointer}: ${error.message}` : String(error.message ?? "");
    return item;
  });
}
