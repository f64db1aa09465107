// Words and formats of a rollout shared by the rollout panel (rollout.js) and the change feed (app.js): its states,
// its percent, the steps typed in the start form, and the feed's line for an `event: rollout`.

/** States in which a rollout is under way (it can still change). */
export const underWay = new Set(["scheduled", "running", "paused"]);

export const stateNames = {
  scheduled: "scheduled",
  running: "running",
  paused: "paused",
  completed: "completed",
  rolledBack: "rolled back",
};

/**
 * `"5 PT10M, 25 PT30M, 100 PT1H"` → `[{percent: 5, hold: "PT10M"}, …]`; the server checks the values (the order,
 * the range, the durations) and says what is wrong, so only the shape is read here.
 */
export function parseSteps(text) {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [percent, hold, ...rest] = part.split(/\s+/);
      if (!hold || rest.length > 0) throw new Error(`"${part}" is not "percent hold" (e.g. "25 PT30M")`);
      return { percent: Number(percent), hold };
    });
}

/** `12.5` → `"12.5%"`. */
export function percentText(value) {
  return `${Number(value ?? 0).toLocaleString("en-US", { maximumFractionDigits: 2 })}%`;
}

/** The change feed's line for an `event: rollout` (`{account, environment, rollout, version, percent, state, author, at}`). */
export function rolloutFeedItem(change) {
  const item = document.createElement("li");
  item.className = "rollout-event";
  const time = document.createElement("time");
  time.dateTime = change.at ?? "";
  time.textContent = change.at ? new Date(change.at).toLocaleTimeString() : "";
  const state = stateNames[change.state] ?? change.state ?? "?";
  const share = underWay.has(change.state) ? ` at ${percentText(change.percent)}` : "";
  item.append(
    time,
    ` rollout #${change.rollout ?? "?"} of ${change.account ?? "?"}: version ${change.version ?? "?"} ${state}${share}` +
      ` by ${change.author ?? "?"}`,
  );
  item.dataset.account = change.account ?? "";
  item.dataset.state = change.state ?? "";
  return item;
}

// MARK: Arm health and the guard (docs/rollouts.md "Guarded rollouts")

/** `n` and its noun, the noun in the plural unless `n` is 1: `(1, "install")` → `"1 install"`. */
export function counted(n, noun) {
  return `${Number(n ?? 0).toLocaleString("en-US")} ${noun}${n === 1 ? "" : "s"}`;
}

/** An arm's failing installs under `kind` (a guard's kind): `failed` for `failures` or no kind, else that kind's count. */
export function failingOf(health, kind) {
  if (!health) return 0;
  if (!kind || kind === "failures") return health.failed ?? 0;
  return health.byKind?.[kind] ?? 0;
}

/** Failing over reporting installs (0 with no reports), as the guard computes it. */
export function shareOf(health, kind) {
  const installs = health?.installs ?? 0;
  return installs > 0 ? failingOf(health, kind) / installs : 0;
}

/** A share from 0 to 1 as the server's reasons write it: `0.3333` → `"33.3%"`, `0.5` → `"50%"`. */
export function shareText(share) {
  const tenths = Math.round(share * 1000);
  return tenths % 10 === 0 ? `${tenths / 10}%` : `${Math.trunc(tenths / 10)}.${tenths % 10}%`;
}

/** `{tab: installs}` as `"search 3, news 1"`, most failing first (ties by name); null when none. */
export function tabsText(byTab) {
  const entries = Object.entries(byTab ?? {}).filter(([, n]) => n > 0);
  if (entries.length === 0) return null;
  entries.sort(([a, m], [b, n]) => n - m || (a < b ? -1 : a > b ? 1 : 0));
  return entries.map(([tab, n]) => `${tab} ${n}`).join(", ");
}

/**
 * The guard's rule in words: `{kind: "tabFailed", maxRatio: 2, minInstalls: 20, minFailures: 5, action:
 * "rollback"}` → "rolls back when the candidate's tabFailed share exceeds 2× stable's, after 20 installs and 5
 * failures."
 */
export function guardText(guard) {
  const verb = guard.action === "rollback" ? "rolls back" : "pauses";
  const bounds = [];
  if (guard.maxRate !== undefined && guard.maxRate !== null) bounds.push(shareText(guard.maxRate));
  if (guard.maxRatio !== undefined && guard.maxRatio !== null) {
    bounds.push(`${Number(guard.maxRatio).toLocaleString("en-US", { maximumFractionDigits: 4 })}× stable's`);
  }
  if (bounds.length === 0) return `never acts: the guard on ${guard.kind} names neither maxRate nor maxRatio.`;
  return (
    `${verb} when the candidate's ${guard.kind} share exceeds ${bounds.join(" or ")}, ` +
    `after ${counted(guard.minInstalls, "install")} and ${counted(guard.minFailures, "failure")}.`
  );
}
