// A server-sent events parser for a fetch body. EventSource cannot POST, and a turn
// is a POST (its message is the body), so the page reads the stream itself.

/** Parses SSE text as it arrives into `{event, data}` objects (data parsed as JSON). */
export class SseParser {
  constructor() {
    this.buffer = "";
  }

  /**
   * Feed decoded text; returns the events it completed.
   * @param {string} text
   * @returns {{event: string, data: any}[]}
   */
  feed(text) {
    this.buffer += text;
    // a lone "\r" at the end may be the first half of "\r\n": wait for the next chunk
    const held = this.buffer.endsWith("\r") ? "\r" : "";
    const body = (held ? this.buffer.slice(0, -1) : this.buffer).replace(/\r\n?/g, "\n");
    const blocks = body.split("\n\n");
    this.buffer = blocks.pop() + held;
    return blocks.map(parseBlock).filter((event) => event !== null);
  }

  /** Whatever complete event is left when the stream ends (a last block without its blank line). */
  finish() {
    const rest = this.buffer.replace(/\r\n?/g, "\n").trim();
    this.buffer = "";
    const event = rest ? parseBlock(rest) : null;
    return event ? [event] : [];
  }
}

function parseBlock(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue; // keep-alive pings are comments
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  try {
    return { event: name, data: JSON.parse(data.join("\n")) };
  } catch {
    return null; // not one of the agent's events: nothing to show
  }
}
