// The source editor: a plain textarea (no wrapping) beside a gutter of line numbers in which the lines that
// have errors are marked, and a list of the errors whose items move the cursor to their line.

/** A textarea with a line gutter and validation errors shown at their lines. */
export class SourceEditor {
  /**
   * @param {{textarea: HTMLTextAreaElement, gutter: HTMLElement, errorBox: HTMLElement, errorList: HTMLElement,
   *          errorHeading: HTMLElement}} elements
   */
  constructor({ textarea, gutter, errorBox, errorList, errorHeading }) {
    this.textarea = textarea;
    this.gutter = gutter;
    this.errorBox = errorBox;
    this.errorList = errorList;
    this.errorHeading = errorHeading;
    this.savedText = "";
    this.lineCount = 0;
    /** @type {Map<number, string[]>} line → messages */
    this.errorLines = new Map();
    textarea.addEventListener("input", () => this.renderGutter());
    textarea.addEventListener("scroll", () => {
      this.gutter.scrollTop = this.textarea.scrollTop;
    });
  }

  /** The text being edited. */
  get text() {
    return this.textarea.value;
  }

  /** Whether the text differs from what was last loaded or saved. */
  get dirty() {
    return this.textarea.value !== this.savedText;
  }

  /** Replaces the text (a freshly loaded or saved source); clears the errors. */
  load(text, { editable = true } = {}) {
    this.savedText = text;
    this.textarea.value = text;
    this.textarea.readOnly = !editable;
    this.textarea.scrollTop = 0;
    this.clearErrors();
  }

  /** Marks the current text as saved. */
  markSaved() {
    this.savedText = this.textarea.value;
  }

  renderGutter() {
    const count = this.textarea.value.split("\n").length;
    if (count === this.lineCount && !this.gutterStale) return;
    this.gutterStale = false;
    this.lineCount = count;
    const fragment = document.createDocumentFragment();
    for (let line = 1; line <= count; line += 1) {
      const number = document.createElement("div");
      number.textContent = String(line);
      number.dataset.line = String(line);
      const messages = this.errorLines.get(line);
      if (messages) {
        number.className = "error-line";
        number.title = messages.join("\n");
      }
      fragment.append(number);
    }
    this.gutter.replaceChildren(fragment);
    this.gutter.scrollTop = this.textarea.scrollTop;
  }

  clearErrors() {
    this.errorLines.clear();
    this.errorList.replaceChildren();
    this.errorBox.hidden = true;
    this.textarea.removeAttribute("aria-invalid");
    this.gutterStale = true;
    this.renderGutter();
  }

  /**
   * Shows a 422's errors: each line that has one is marked in the gutter; the list names pointer, line and
   * message, and focus moves to the list's heading.
   * @param {Array<{pointer: string, line?: number, message: string, build?: {platform: string, appVersion: string}}>} errors
   * @param {string} heading
   */
  showErrors(errors, heading) {
    this.clearErrors();
    for (const error of errors) {
      if (Number.isInteger(error.line) && error.line >= 1) {
        const messages = this.errorLines.get(error.line) ?? [];
        messages.push(error.message);
        this.errorLines.set(error.line, messages);
      }
    }
    const sorted = [...errors].sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
    for (const error of sorted) {
      const item = document.createElement("li");
      const where = Number.isInteger(error.line) ? `Line ${error.line}` : "No line";
      if (Number.isInteger(error.line)) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "link";
        button.textContent = where;
        button.dataset.line = String(error.line);
        button.addEventListener("click", () => this.goToLine(error.line));
        item.append(button);
      } else {
        item.append(where);
      }
      const pointer = document.createElement("code");
      pointer.textContent = error.pointer || "/";
      item.append(" ", pointer, `: ${error.message}`);
      // The builds gate's errors name the build that could not open the tab (422 `incompatible-build`).
      if (error.build) item.dataset.build = `${error.build.platform} ${error.build.appVersion}`;
      this.errorList.append(item);
    }
    this.errorHeading.textContent = heading;
    this.errorBox.hidden = false;
    this.textarea.setAttribute("aria-invalid", "true");
    this.gutterStale = true;
    this.renderGutter();
    this.errorHeading.focus();
  }

  /** Focuses the textarea with line `line` (1-based) selected and scrolled into view. */
  goToLine(line) {
    const lines = this.textarea.value.split("\n");
    const index = Math.min(Math.max(line, 1), lines.length) - 1;
    let start = 0;
    for (let i = 0; i < index; i += 1) start += lines[i].length + 1;
    this.textarea.focus();
    this.textarea.setSelectionRange(start, start + lines[index].length);
    const lineHeight = parseFloat(getComputedStyle(this.textarea).lineHeight) || 18;
    this.textarea.scrollTop = Math.max(0, index * lineHeight - this.textarea.clientHeight / 3);
  }
}
