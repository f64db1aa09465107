// The change feed: `GET /v1/events` read with fetch() and a stream reader, because EventSource cannot send the
// Authorization header. Parses text/event-stream as the HTML standard defines it (§9.2.6) and reconnects with
// `Last-Event-ID` after a drop.

import { ApiError, openEvents } from "./api.js";

/**
 * Splits a text/event-stream into events. Feed it decoded text in any chunking; it calls `onEvent` with
 * `{type, data, id}` for each complete event (a blank line ends one).
 */
export class EventStreamParser {
  /** @param {(event: {type: string, data: string, id: string | null}) => void} onEvent */
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.buffer = "";
    this.afterCR = false;
    this.lastEventId = null;
    /** The reconnection delay the stream asked for (`retry:`), in milliseconds, or null. */
    this.retry = null;
    this.reset();
  }

  reset() {
    this.type = "";
    this.data = [];
    this.seenField = false;
  }

  /** Adds decoded text; complete lines are handled at once, a partial last line waits for the rest. */
  push(text) {
    // A CR ends a line at once; an LF right after it (even in the next chunk) belongs to it and is skipped.
    if (this.afterCR && text.startsWith("\n")) text = text.slice(1);
    this.afterCR = false;
    this.buffer += text;
    for (;;) {
      const match = /\r\n|\n|\r/.exec(this.buffer);
      if (match === null) return;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      if (match[0] === "\r" && this.buffer === "") this.afterCR = true;
      this.line(line);
    }
  }

  line(line) {
    if (line === "") {
      if (this.seenField) {
        this.onEvent({ type: this.type || "message", data: this.data.join("\n"), id: this.lastEventId });
      }
      this.reset();
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.type = value;
        this.seenField = true;
        break;
      case "data":
        this.data.push(value);
        this.seenField = true;
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break;
    }
  }
}

/**
 * Follows the change feed until `stop()`. The server may hold each answer until there are events (or a heartbeat
 * is due) and then end it: the next request follows after the stream's `retry:` delay (1 s by default), resuming after the
 * last `id:` seen, so that no event falls between two answers. After a failure the delay doubles from 1 s to at
 * most 30 s.
 */
export class ChangeFeed {
  /**
   * @param {{onEvent: (event: {type: string, data: string, id: string | null}) => void,
   *          onState: (state: "listening" | "waiting" | "refused" | "stopped", detail?: string) => void}} handlers
   */
  constructor({ onEvent, onState }) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.controller = null;
    this.lastEventId = null;
    this.retry = 1000;
    this.stopped = true;
    this.timer = null;
  }

  start() {
    this.stopped = false;
    this.onState("listening");
    this.follow(0);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller?.abort();
    this.controller = null;
    this.onState("stopped");
  }

  async follow(failures) {
    if (this.stopped) return;
    this.controller = new AbortController();
    try {
      const response = await openEvents({ lastEventId: this.lastEventId, signal: this.controller.signal });
      if (failures > 0) this.onState("listening");
      const parser = new EventStreamParser((event) => this.onEvent(event));
      parser.lastEventId = this.lastEventId;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
        // Heartbeats carry an `id:` too: keep it even when no event was dispatched.
        this.lastEventId = parser.lastEventId;
        if (parser.retry !== null) this.retry = parser.retry;
      }
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof ApiError && error.status === 401) {
        this.onState("refused", error.message);
        return;
      }
      const delay = Math.min(1000 * 2 ** failures, 30000);
      this.onState("waiting", error.message);
      this.timer = setTimeout(() => this.follow(failures + 1), delay);
      return;
    }
    if (!this.stopped) this.timer = setTimeout(() => this.follow(0), this.retry);
  }
}
