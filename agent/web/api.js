// The HTTP API as the page uses it: JSON calls and streamed turns, with the app's one
// error shape `{"error": {"code", "message"}}` turned into `ApiError`s.

import { SseParser } from "./sse.js";

/** An API call that failed; `message` is fit to show on the page. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

const UNREACHABLE = "The server could not be reached. Check that it is running, then try again.";
const SERVER_WORDS = {
  storage_unavailable: "Storage is unavailable right now; nothing was saved. Try again shortly.",
};
const SERVER_FAILED = "The server could not complete this request; nothing was saved.";
const NOT_FOUND = "That conversation no longer exists.";
const UNEXPECTED = "The server answered with something this page does not understand.";

async function errorOf(response) {
  let code = `http_${response.status}`;
  let message = "";
  try {
    const body = await response.json();
    if (body && typeof body.error === "object" && body.error) {
      code = String(body.error.code || code);
      message = String(body.error.message || "");
    }
  } catch {
    // not the app's error shape (a proxy's page, say): fall back to our own words
  }
  // A 4xx message is written for the person (what to fix); server-side failures get the
  // page's own words, so no server detail is ever shown.
  if (response.status >= 500) message = SERVER_WORDS[code] || SERVER_FAILED;
  else if (code === "not_found") message = NOT_FOUND;
  else if (!message) message = `The request was refused (${response.status}).`;
  return new ApiError(response.status, code, message);
}

async function send(method, path, body, signal) {
  const init = { method, headers: { Accept: "application/json" }, signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  try {
    return await fetch(path, init);
  } catch (error) {
    if (error && error.name === "AbortError") throw error;
    throw new ApiError(0, "unreachable", UNREACHABLE);
  }
}

/**
 * A JSON request. Resolves to the parsed body (null for 204 No Content).
 * @throws {ApiError}
 */
export async function requestJson(method, path, body) {
  const response = await send(method, path, body);
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return null;
  try {
    return await response.json();
  } catch {
    throw new ApiError(response.status, "bad_response", UNEXPECTED);
  }
}

/**
 * POST `body` to a streaming route and hand each server-sent event to `onEvent` as it
 * arrives (`{event, data}`). Resolves when the stream ends.
 * @param {string} path
 * @param {object} body
 * @param {{signal: AbortSignal, onEvent: (event: {event: string, data: any}) => void}} options
 * @throws {ApiError} when the server refuses the turn before it starts (404, 409, …);
 *   an AbortError when `signal` aborts.
 */
export async function streamEvents(path, body, { signal, onEvent }) {
  const response = await send("POST", path, body, signal);
  if (!response.ok) throw await errorOf(response);
  if (!(response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
    throw new ApiError(response.status, "bad_response", UNEXPECTED);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let ended = false;
  try {
    for (;;) {
      const { value, done } = await read(reader);
      if (done) break;
      for (const event of parser.feed(decoder.decode(value, { stream: true }))) onEvent(event);
    }
    ended = true;
  } finally {
    // stopped early (aborted, or an event could not be shown): close the connection, so
    // the server cancels the turn rather than writing into a socket nobody reads
    if (!ended) reader.cancel().catch(() => {});
  }
  for (const event of [...parser.feed(decoder.decode()), ...parser.finish()]) onEvent(event);
}

async function read(reader) {
  try {
    return await reader.read();
  } catch (error) {
    if (error && error.name === "AbortError") throw error;
    throw new ApiError(0, "stream_broken", "The connection was lost before the answer ended.");
  }
}
