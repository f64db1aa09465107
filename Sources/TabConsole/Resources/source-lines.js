// The line of the editor an error belongs to when the server gives only a JSON Pointer (the builds gate's refusals,
// 422 `incompatible-build`: each error points into the layout as resolved, with the name the build lacks in
// `value`). Compile errors come with their `line` already; these are found in the text being edited.

/**
 * Every value of the JSON `text` with its pointer and the line it starts on (strings with their value, others with
 * null); [] when the text is not JSON. A small scanner: JSON.parse keeps no positions.
 * @returns {Array<{pointer: string, line: number, value: string | null}>}
 */
export function jsonValueLines(text) {
  const found = [];
  let index = 0;
  let line = 1;

  const fail = () => {
    throw new SyntaxError("not JSON");
  };
  const space = () => {
    while (index < text.length && " \t\r\n".includes(text[index])) {
      if (text[index] === "\n") line += 1;
      index += 1;
    }
  };
  const string = () => {
    const start = index;
    index += 1;
    while (index < text.length && text[index] !== '"') index += text[index] === "\\" ? 2 : 1;
    if (index >= text.length) fail();
    index += 1;
    return JSON.parse(text.slice(start, index));
  };
  const escape = (key) => key.replaceAll("~", "~0").replaceAll("/", "~1");

  const value = (pointer) => {
    space();
    const at = line;
    const first = text[index];
    if (first === "{") {
      found.push({ pointer, line: at, value: null });
      index += 1;
      space();
      if (text[index] === "}") {
        index += 1;
        return;
      }
      for (;;) {
        space();
        if (text[index] !== '"') fail();
        const key = string();
        space();
        if (text[index] !== ":") fail();
        index += 1;
        value(`${pointer}/${escape(key)}`);
        space();
        if (text[index] === ",") index += 1;
        else if (text[index] === "}") {
          index += 1;
          return;
        } else fail();
      }
    }
    if (first === "[") {
      found.push({ pointer, line: at, value: null });
      index += 1;
      space();
      if (text[index] === "]") {
        index += 1;
        return;
      }
      for (let item = 0; ; item += 1) {
        value(`${pointer}/${item}`);
        space();
        if (text[index] === ",") index += 1;
        else if (text[index] === "]") {
          index += 1;
          return;
        } else fail();
      }
    }
    if (first === '"') {
      found.push({ pointer, line: at, value: string() });
      return;
    }
    const literal = /^(-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(text.slice(index, index + 64));
    if (!literal) fail();
    index += literal[0].length;
    found.push({ pointer, line: at, value: null });
  };

  try {
    value("");
    space();
    return index === text.length ? found : [];
  } catch {
    return [];
  }
}

/**
 * The line of `source` (the editor's text, of media type `contentType`) where the gate's error `{pointer, value}`
 * is: in JSON, the value at `pointer` when it is `value`, else the first tab or child whose field of that name (the
 * pointer's last segment) is `value` (the layout as resolved may order tabs otherwise than the source); in a
 * property list, the first `<string>` that is `value`. Null when the source does not name it (an inherited tab).
 */
export function gateErrorLine(source, contentType, { pointer, value }) {
  if (typeof value !== "string" || value === "") return null;
  if (/json/i.test(contentType ?? "")) {
    const values = jsonValueLines(source);
    const exact = values.find((entry) => entry.pointer === pointer && entry.value === value);
    if (exact) return exact.line;
    const field = String(pointer ?? "").split("/").at(-1);
    const tab = new RegExp(`^/tabs/\\d+(/children/\\d+)*/${field.replace(/[^A-Za-z]/g, "")}$`);
    return values.find((entry) => tab.test(entry.pointer) && entry.value === value)?.line ?? null;
  }
  const escaped = value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
  const index = source.split("\n").findIndex((text) => text.includes(`<string>${escaped}</string>`));
  return index < 0 ? null : index + 1;
}
