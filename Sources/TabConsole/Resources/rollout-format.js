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
