// The account page's rollout panel (docs/rollouts.md): the environments' pointers, the newest
// rollout (state, percent, steps with the current one marked, the next step's time, the reason of a rollback),
// its two arms drawn as their tab bars with the answers each served and what the apps reported of each (its
// health), the guard's rule and what the guard did, and the buttons that start, raise, pause,
// resume, complete and roll back a rollout (`deploy` only: console.css hides them from other tokens).
//
// app.js owns the account and tells the panel when it opens one (`show`), when the versions were listed
// (`setVersions`) and when the change feed says a rollout changed (`onEvent`).

import { byId, formatTime, heldForReviewText, problemItems } from "./dom.js";
import * as rollouts from "./rollout-api.js";
import { pointersOf } from "./promotion.js";
import {
  counted,
  failingOf,
  guardText,
  parseSteps,
  percentText,
  shareOf,
  shareText,
  stateNames,
  tabsText,
  underWay,
} from "./rollout-format.js";

/** The author the server records for what it did by itself: a step on the clock, or the guard's pause or rollback. */
const serverAuthor = "tabserver";

/** While a rollout is under way its served counts grow: read again this often (and at once on its events). */
const refreshSeconds = 5;

export class RolloutPanel {
  /**
   * @param {{announce: (text: string) => void, warn: (text: string) => void,
   *   busy: (button: HTMLButtonElement | null, work: () => Promise<void>) => Promise<void>,
   *   variant: () => {locale: string, platform: string, scheme: string}, currentETag: () => string | null,
   *   changed: () => Promise<void>, shown: () => void}} context
   *   `currentETag` is the ETag of the environment's version as the page loaded it (a start's `If-Match`);
   *   `changed` reloads what a completion or a rollback moved (the source, the preview, the history); `shown` is
   *   told each time the rollout was read again (the builds matrix follows what is served: `served()`).
   */
  constructor(context) {
    this.context = context;
    this.account = null;
    this.rollout = null;
    this.versions = [];
    /** The environment whose rollout is shown and changed: null until the versions name more than one (then the
     * server's default applies, the first environment), else the one chosen (at first the last: the apps'). */
    this.environment = null;
    /** Which versions the drawn arms show, so that a refresh that changes only counts does not redraw them. */
    this.drawn = { stable: null, candidate: null };
    this.timer = null;
    this.ui = {
      meta: byId("rollout-meta"),
      environments: byId("environment-rows"),
      environment: byId("rollout-environment"),
      environmentChoice: byId("rollout-environment-choice"),
      errors: byId("rollout-errors"),
      errorsHeading: byId("rollout-errors-heading"),
      errorText: byId("rollout-error-text"),
      errorList: byId("rollout-error-list"),
      summary: byId("rollout-summary"),
      view: byId("rollout-view"),
      state: byId("rollout-state"),
      percent: byId("rollout-percent"),
      next: byId("rollout-next"),
      reason: byId("rollout-reason"),
      steps: byId("rollout-steps"),
      history: byId("rollout-history"),
      guard: byId("rollout-guard"),
      guardTripped: byId("rollout-guard-tripped"),
      testersHealth: byId("rollout-testers-health"),
      advance: byId("rollout-advance"),
      setPercent: byId("rollout-set-percent"),
      raise: byId("rollout-raise"),
      pause: byId("rollout-pause"),
      resume: byId("rollout-resume"),
      complete: byId("rollout-complete"),
      reasonInput: byId("rollout-reason-input"),
      rollback: byId("rollout-rollback"),
      controls: byId("rollout-controls"),
      start: byId("rollout-start"),
      version: byId("rollout-version"),
      startPercent: byId("rollout-start-percent"),
      startSteps: byId("rollout-start-steps"),
      startButton: byId("rollout-start-button"),
    };
    const { ui } = this;
    const act = (button, work) => button.addEventListener("click", () => this.act(button, work));
    act(ui.advance, () => this.advance());
    act(ui.raise, () => this.raise());
    act(ui.pause, () => this.change(rollouts.patchRollout(this.account, this.environment, { paused: true }), "Paused"));
    act(ui.resume, () => this.change(rollouts.patchRollout(this.account, this.environment, { paused: false }), "Resumed"));
    act(ui.complete, () => this.change(rollouts.completeRollout(this.account, this.environment), "Completed"));
    act(ui.rollback, () => this.rollBack());
    ui.environment.addEventListener("change", () => {
      this.environment = ui.environment.value || null;
      this.renderVersionChoices();
      this.context.busy(null, () => this.showEnvironment());
    });
    ui.start.addEventListener("submit", (event) => {
      event.preventDefault();
      this.act(ui.startButton, () => this.start());
    });
  }

  /** The panel for `account` (null: none open), loaded from the server. */
  async show(account) {
    this.account = account;
    this.environment = null;
    this.versions = [];
    this.rollout = null;
    this.drawn = { stable: null, candidate: null };
    for (const arm of ["stable", "candidate"]) {
      const image = byId(`rollout-${arm}-image`);
      image.hidden = true;
      image.removeAttribute("src");
    }
    this.clearProblem();
    this.ui.view.hidden = true;
    this.ui.reasonInput.value = "";
    this.ui.setPercent.value = "";
    if (account) await this.refresh();
    else this.stop();
  }

  /** Another environment chosen: its rollout, read afresh. */
  async showEnvironment() {
    this.rollout = null;
    this.drawn = { stable: null, candidate: null };
    this.clearProblem();
    this.ui.view.hidden = true;
    await this.refresh();
  }

  /** No account, no timer (signing out). */
  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.account = null;
  }

  /** The versions `GET …/layout/versions` listed (newest first): the environments' pointers and the start's choices. */
  setVersions(versions) {
    this.versions = versions;
    const before = this.environment;
    this.renderEnvironments();
    this.renderVersionChoices();
    if (this.environment !== before) this.showEnvironment().catch((error) => this.context.warn(error.message));
  }

  /** An `event: rollout` from the change feed: the open account's rollout is read again. */
  onEvent(change) {
    const here = !this.environment || change.environment === this.environment;
    if (change.account === this.account && here) this.refresh().catch((error) => this.context.warn(error.message));
  }

  /** Reads the rollout again and shows it; while one is under way, again in a few seconds. */
  async refresh() {
    const account = this.account;
    clearTimeout(this.timer);
    const environment = this.environment;
    const rollout = await rollouts.getRollout(account, environment);
    if (account !== this.account || environment !== this.environment) return;
    this.rollout = rollout;
    this.render();
    this.context.shown();
    if (rollout && underWay.has(rollout.state)) this.schedule(account);
  }

  /** What the environment shown serves: whether the versions were listed yet, its name (null: the only one), the
   * version it points at (null: none of the account's) and, while a rollout is under way there, its candidate with
   * its share. */
  served() {
    const pointers = pointersOf(this.versions);
    const pointer = this.environment ? pointers.find((entry) => entry.environment === this.environment) : pointers.at(-1);
    const going = Boolean(this.rollout) && underWay.has(this.rollout.state);
    return {
      listed: this.versions.length > 0,
      environment: this.environment,
      stable: going ? this.rollout.stableVersion : (pointer?.version ?? null),
      candidate: going ? { version: this.rollout.version, percent: this.rollout.percent } : null,
    };
  }

  /** Reads the rollout of `account` again in a few seconds (later still while the tab is hidden). */
  schedule(account) {
    this.timer = setTimeout(() => {
      if (account !== this.account) return;
      if (document.hidden) this.schedule(account);
      else this.refresh().catch(() => this.schedule(account));
    }, refreshSeconds * 1000);
  }

  // MARK: Showing

  render() {
    const { ui, rollout } = this;
    const going = Boolean(rollout) && underWay.has(rollout.state);
    ui.start.hidden = going;
    if (!rollout) {
      ui.view.hidden = true;
      ui.meta.textContent = "";
      ui.summary.textContent = "No rollout yet: save a draft, then start one to serve it to a share of installs.";
      return;
    }
    ui.meta.textContent = `(#${rollout.id} in ${rollout.environment}, started ${formatTime(rollout.startedAt)})`;
    ui.summary.textContent = going
      ? `Version ${rollout.version} goes to ${percentText(rollout.percent)} of installs; the others keep version ${rollout.stableVersion}.`
      : `The last rollout (version ${rollout.version} over version ${rollout.stableVersion}) is ${stateNames[rollout.state] ?? rollout.state}.`;
    ui.view.hidden = false;
    ui.state.textContent = stateNames[rollout.state] ?? rollout.state;
    ui.state.dataset.state = rollout.state;
    ui.percent.textContent = `${percentText(rollout.percent)} of installs get version ${rollout.version}`;
    ui.next.textContent = rollout.nextStepAt ? formatTime(rollout.nextStepAt) : "none";
    ui.reason.textContent = rollout.reason ?? "";
    ui.reason.hidden = !rollout.reason;
    ui.reason.previousElementSibling.hidden = !rollout.reason;
    this.renderSteps();
    this.renderHistory();
    this.renderArm("stable", rollout.stableVersion, rollout.served?.stable);
    this.renderArm("candidate", rollout.version, rollout.served?.candidate);
    this.renderHealth();
    this.renderGuard();

    ui.controls.hidden = !going;
    // A scheduled rollout can only be rolled back (which cancels it); a paused one raised or resumed.
    const scheduled = rollout.state === "scheduled";
    const next = scheduled ? null : this.nextStep();
    ui.advance.hidden = !next;
    if (next) ui.advance.textContent = `Next step: ${percentText(next.percent)}`;
    for (const element of [ui.setPercent, ui.setPercent.labels[0], ui.raise]) element.hidden = scheduled;
    ui.pause.hidden = rollout.state !== "running";
    ui.resume.hidden = rollout.state !== "paused";
  }

  /** The step after the current one, when the rollout has steps and one is left. */
  nextStep() {
    const { rollout } = this;
    if (!rollout || !Array.isArray(rollout.steps) || rollout.steps.length === 0) return null;
    const index = rollout.step === null || rollout.step === undefined ? 0 : rollout.step + 1;
    return rollout.steps.slice(index).find((step) => step.percent > rollout.percent) ?? null;
  }

  renderSteps() {
    const { rollout } = this;
    const steps = Array.isArray(rollout.steps) ? rollout.steps : [];
    this.ui.steps.hidden = steps.length === 0;
    this.ui.steps.replaceChildren(
      ...steps.map((step, index) => {
        const item = document.createElement("li");
        item.textContent = `${percentText(step.percent)} for ${step.hold}`;
        if (index === rollout.step && underWay.has(rollout.state)) {
          item.setAttribute("aria-current", "step");
          item.append(" (now)");
        } else if (rollout.step !== null && index < rollout.step) {
          item.className = "done";
        }
        return item;
      }),
    );
  }

  /** Every recorded change, oldest first: when, what (the server's message) and by whom. */
  renderHistory() {
    const lines = Array.isArray(this.rollout.history) ? this.rollout.history : [];
    this.ui.history.replaceChildren(
      ...lines.map((line) => {
        const item = document.createElement("li");
        item.dataset.change = line.change;
        const time = document.createElement("time");
        time.dateTime = line.at;
        time.textContent = formatTime(line.at);
        const author = document.createElement("span");
        author.className = "author";
        author.textContent = `by ${line.author}`;
        item.append(time, ` ${line.message} `, author);
        return item;
      }),
    );
  }

  /** One arm: its version drawn by the server (drawn again only when the version or the variant changed; one
   * that could not be drawn says why under its caption, and is not asked for again at every refresh). */
  renderArm(arm, version, served) {
    const image = byId(`rollout-${arm}-image`);
    const caption = byId(`rollout-${arm}-caption`);
    const name = arm === "stable" ? "Stable" : "Candidate";
    const counts = `${name} · version ${version} · served ${Number(served ?? 0).toLocaleString("en-US")}`;
    const variant = this.context.variant();
    const key = `${version}|${variant.locale}|${variant.platform}|${variant.scheme}`;
    if (this.drawn[arm]?.key === key) {
      caption.textContent = counts + (this.drawn[arm].failure ?? "");
      return;
    }
    this.drawn[arm] = { key };
    caption.textContent = counts;
    const account = this.account;
    rollouts
      .drawVersion(account, version, variant)
      .then((url) => {
        if (account !== this.account || this.drawn[arm]?.key !== key) return;
        image.src = url;
        image.closest("figure").dataset.scheme = variant.scheme ?? "light";
        image.alt = `${name} arm: tab bar of ${account} version ${version}${variant.scheme === "dark" ? " (dark)" : ""}`;
        image.hidden = false;
      })
      .catch((error) => {
        if (account !== this.account || this.drawn[arm]?.key !== key) return;
        this.drawn[arm].failure =
          error.status === 403
            ? " · not drawn (drawing a stored version takes a token that may write)"
            : ` · not drawn: ${error.message}`;
        image.hidden = true;
        image.removeAttribute("src");
        caption.textContent += this.drawn[arm].failure;
      });
  }

  /** Each arm's health beside its tab bar: installs reporting, failing ones (under the guard's kind, else any
   * failure) with their share, and the failing tabs; the testers' arm in a line of its own when it reported. */
  renderHealth() {
    const health = this.rollout.health ?? null;
    const kind = this.rollout.guard?.kind ?? null;
    for (const arm of ["stable", "candidate"]) {
      const list = byId(`rollout-${arm}-health`);
      const counts = health?.[arm] ?? null;
      list.hidden = !health;
      if (!health) {
        list.replaceChildren();
        continue;
      }
      const failing = failingOf(counts, kind);
      const row = (term, value, name) => {
        const dt = document.createElement("dt");
        dt.textContent = term;
        const dd = document.createElement("dd");
        dd.textContent = value;
        dd.dataset.health = name;
        return [dt, dd];
      };
      const failingRow = row(
        kind && kind !== "failures" ? `Failing (${kind})` : "Failing",
        `${counted(failing, "install")} · ${shareText(shareOf(counts, kind))}`,
        "failing",
      );
      failingRow[1].dataset.failing = String(failing > 0);
      list.replaceChildren(
        ...row("Reporting", counted(counts?.installs ?? 0, "install"), "installs"),
        ...failingRow,
        ...row("Failing tabs", tabsText(counts?.byTab) ?? "none", "tabs"),
      );
    }
    const testers = health?.testers;
    this.ui.testersHealth.hidden = !testers || !(testers.installs > 0);
    if (testers && testers.installs > 0) {
      const tabs = tabsText(testers.byTab);
      this.ui.testersHealth.textContent =
        `Testers (their own arm, outside the guard): ${counted(testers.installs, "install")} reporting, ` +
        `${failingOf(testers, kind)} failing (${shareText(shareOf(testers, kind))})${tabs ? `; failing tabs ${tabs}` : ""}.`;
    }
  }

  /** The guard's rule in words, and, when the guard paused or rolled back this rollout, when and why. */
  renderGuard() {
    const { rollout, ui } = this;
    ui.guard.textContent = rollout.guard ? `Guard: ${guardText(rollout.guard)}` : "No guard: only an operator or an alert pauses or rolls back this rollout.";
    const tripped = this.guardTrip();
    ui.guardTripped.hidden = !tripped;
    if (!tripped) {
      ui.guardTripped.textContent = "";
      return;
    }
    const time = document.createElement("time");
    time.dateTime = tripped.at;
    time.textContent = formatTime(tripped.at);
    const done = tripped.state === "rolledBack" ? "Rolled back" : "Paused";
    ui.guardTripped.replaceChildren(`${done} by the guard (${serverAuthor}) at `, time, `: ${tripped.reason}`);
  }

  /** The history line of the guard's pause or rollback that left the rollout as it is now (a pause an operator
   * resumed since is no longer shown), or null. */
  guardTrip() {
    const { rollout } = this;
    if (rollout.state !== "paused" && rollout.state !== "rolledBack") return null;
    const lines = Array.isArray(rollout.history) ? rollout.history : [];
    // The line that moved the rollout into its present state: the first of the last run of lines in that state.
    let index = lines.length - 1;
    if (index < 0 || lines[index].state !== rollout.state) return null;
    while (index > 0 && lines[index - 1].state === rollout.state) index -= 1;
    const last = lines[index];
    if (last.author !== serverAuthor) return null;
    const reason = last.reason ?? (rollout.state === "rolledBack" ? rollout.reason : null);
    return reason ? { at: last.at, state: last.state, reason } : null;
  }

  /** Which environment points at which version (from the versions list, in promotion order: promotion.js).
   * More than one environment: the panel shows the chosen one's rollout, at first the last one's (the apps'). */
  renderEnvironments() {
    const pointers = pointersOf(this.versions);
    this.ui.environments.replaceChildren(
      ...pointers.map(({ environment, version }) => {
        const row = document.createElement("tr");
        row.dataset.environment = environment;
        const name = document.createElement("th");
        name.scope = "row";
        name.textContent = environment;
        const points = document.createElement("td");
        points.textContent = `version ${version}`;
        row.append(name, points);
        return row;
      }),
    );
    const names = pointers.map((pointer) => pointer.environment);
    this.ui.environmentChoice.hidden = names.length < 2;
    if (names.length < 2) {
      this.environment = null;
      return;
    }
    this.ui.environment.replaceChildren(
      ...names.map((name) => {
        const option = document.createElement("option");
        option.value = name;
        option.textContent = name;
        return option;
      }),
    );
    if (!names.includes(this.environment)) this.environment = names.at(-1);
    this.ui.environment.value = this.environment;
  }

  /** The ETag of the version the shown environment points at (a start's `If-Match`), else the page's. */
  pointerETag() {
    if (!this.environment) return this.context.currentETag();
    const pointed = this.versions.find((entry) => (entry.environments ?? []).includes(this.environment));
    return pointed?.etag ?? this.context.currentETag();
  }

  /** The versions a rollout can start with: every stored one the environment does not point at (with one
   * environment: that no environment points at), newest first. */
  renderVersionChoices() {
    const chosen = this.ui.version.value;
    const pointed = (entry) =>
      this.environment ? (entry.environments ?? []).includes(this.environment) : (entry.environments ?? []).length > 0;
    const options = this.versions
      .filter((entry) => !entry.deleted && !pointed(entry))
      .map((entry) => {
        const option = document.createElement("option");
        option.value = String(entry.version);
        option.textContent = `version ${entry.version}${entry.message ? ` · ${entry.message}` : ""}`;
        return option;
      });
    this.ui.version.replaceChildren(...options);
    if (options.some((option) => option.value === chosen)) this.ui.version.value = chosen;
    this.ui.startButton.disabled = options.length === 0;
  }

  /** Draws the arms again if the variant (locale, platform) changed. */
  redraw() {
    if (this.rollout) this.render();
  }

  /** Chooses `version` in the start form (a draft just saved). */
  choose(version) {
    this.ui.version.value = String(version);
  }

  // MARK: Acting

  /** Runs `work` with `button` disabled; a refusal is shown from its problem (and said in the alert region). */
  act(button, work) {
    return this.context.busy(button, async () => {
      this.clearProblem();
      try {
        await work();
      } catch (error) {
        if (error.status === undefined || error.status === 0 || error.status === 401) throw error;
        this.showProblem(error);
        this.context.warn(`Refused: ${error.message}`);
        await this.refresh().catch(() => undefined);
      }
    });
  }

  async start() {
    const version = Number(this.ui.version.value);
    if (!version) throw new Error("Choose a version to roll out (save a draft first).");
    const stepsText = this.ui.startSteps.value.trim();
    const percent = this.ui.startPercent.value.trim();
    let plan;
    if (stepsText) plan = { version, steps: parseSteps(stepsText) };
    else if (percent) plan = { version, percent: Number(percent) };
    else throw new Error("Give a percent or steps to start the rollout with.");
    const started = await rollouts.startRollout(this.account, this.environment, plan, this.pointerETag());
    this.ui.startSteps.value = "";
    this.ui.startPercent.value = "";
    if (started.changeRequest) {
      this.context.announce(heldForReviewText(started.changeRequest, `The rollout of version ${version}`));
      return;
    }
    this.rollout = started;
    await this.refresh();
    this.context.announce(`Started rollout #${started.id}: version ${started.version} at ${percentText(started.percent)}.`);
  }

  async advance() {
    const next = this.nextStep();
    if (!next) return;
    const raised = rollouts.patchRollout(this.account, this.environment, { percent: next.percent });
    await this.change(raised, `Raised to ${percentText(next.percent)}`);
  }

  async raise() {
    const text = this.ui.setPercent.value.trim();
    if (!text) throw new Error("Type the percent to raise the rollout to.");
    const raised = rollouts.patchRollout(this.account, this.environment, { percent: Number(text) });
    await this.change(raised, `Raised to ${percentText(text)}`);
    this.ui.setPercent.value = "";
  }

  async rollBack() {
    const reason = this.ui.reasonInput.value.trim();
    if (!reason) {
      this.ui.reasonInput.focus();
      throw new Error("Say why it is rolled back (the reason is recorded in history).");
    }
    await this.change(rollouts.rollBack(this.account, this.environment, reason), "Rolled back");
    this.ui.reasonInput.value = "";
  }

  /** Waits for a change's answer, shows the rollout it answered, and reloads what it may have moved. */
  async change(request, done) {
    const rollout = await request;
    if (rollout.changeRequest) {
      // A raise or a completion into an environment that needs approval (a pause or a rollback never waits).
      this.context.announce(heldForReviewText(rollout.changeRequest, `${done} (asked)`));
      return;
    }
    this.rollout = rollout;
    await this.refresh();
    await this.context.changed();
    this.context.announce(`${done}: rollout #${rollout.id} is ${stateNames[rollout.state] ?? rollout.state}.`);
  }

  clearProblem() {
    this.ui.errors.hidden = true;
    this.ui.errorText.textContent = "";
    this.ui.errorList.replaceChildren();
  }

  /** A refusal's problem+json: its title and detail, and a 422's `errors` one per line. */
  showProblem(error) {
    const problem = error.problem ?? {};
    this.ui.errorsHeading.textContent = `The server refused that (${error.status} ${problem.title ?? "error"})`;
    this.ui.errorText.textContent = problem.detail ?? error.message;
    this.ui.errorList.replaceChildren(...problemItems(Array.isArray(problem.errors) ? problem.errors : []));
    this.ui.errors.hidden = false;
  }
}
