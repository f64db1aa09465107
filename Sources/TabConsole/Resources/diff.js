// Renders a tab-level diff (`GET …/layout/versions/{n}/diff?against=m`) as a table.

const verbs = { added: "Added", removed: "Removed", moved: "Moved", changed: "Changed" };

/** A JSON value as short text for a table cell. */
function show(value) {
  if (value === undefined) return "";
  return typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value, null, 0);
}

/**
 * A table of the changes from version `from` to version `to`, or a sentence when there are none.
 * @param {{from: number, to: number, changes: Array<{op: string, tab?: string, pointer: string, from?: unknown, to?: unknown}>}} diff
 * @returns {HTMLElement}
 */
export function renderDiff(diff) {
  const changes = Array.isArray(diff.changes) ? diff.changes : [];
  if (changes.length === 0) {
    const none = document.createElement("p");
    none.textContent = `No change between version ${diff.from} and version ${diff.to}.`;
    return none;
  }
  const table = document.createElement("table");
  table.className = "diff";
  const caption = document.createElement("caption");
  // No `from`: there was no layout before (a first version, or one that would make an account's own layout).
  const from = diff.from === undefined || diff.from === null ? "no layout" : `version ${diff.from}`;
  caption.textContent = `${changes.length} change${changes.length === 1 ? "" : "s"} from ${from} to version ${diff.to}`;
  table.append(caption);
  const head = table.createTHead().insertRow();
  for (const title of ["Change", "Tab", "Where", "Before", "After"]) {
    const cell = document.createElement("th");
    cell.scope = "col";
    cell.textContent = title;
    head.append(cell);
  }
  const body = table.createTBody();
  for (const change of changes) {
    const row = body.insertRow();
    row.className = `op-${change.op}`;
    const values = [verbs[change.op] ?? change.op, change.tab ?? "(layout)", change.pointer ?? "", show(change.from), show(change.to)];
    values.forEach((value, index) => {
      const cell = row.insertCell();
      if (index >= 2) {
        const code = document.createElement("code");
        code.textContent = value;
        cell.append(code);
      } else {
        cell.textContent = value;
      }
    });
  }
  return table;
}
