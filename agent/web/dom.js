// DOM helpers. Every piece of text goes in as a text node (textContent), never as
// markup: what users and the model write can only ever be shown, not run.

/**
 * Create an element.
 * @param {string} tag
 * @param {object} [props] class, text, attrs (attribute map), on (event map), and
 *   any DOM property (type, value, disabled, hidden, …).
 * @param {...(Node|string|null|undefined|false)} children strings become text nodes
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "attrs") {
      for (const [name, attr] of Object.entries(value)) node.setAttribute(name, String(attr));
    } else if (key === "on") {
      for (const [name, handler] of Object.entries(value)) node.addEventListener(name, handler);
    } else node[key] = value;
  }
  append(node, ...children);
  return node;
}

/** Append children (strings as text nodes; null, undefined and false are skipped). */
export function append(node, ...children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** Remove every child of `node`. */
export function clear(node) {
  node.replaceChildren();
  return node;
}

/** `n noun` with the noun in the plural unless n is 1. */
export function plural(n, noun, nouns = `${noun}s`) {
  return `${n} ${n === 1 ? noun : nouns}`;
}

const TIME = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const DAY_TIME = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});
const DAY = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const DATE = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
});

/** A short local time for an ISO-8601 string: the time today, else day and time. */
export function shortTime(iso) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return "";
  const today = new Date();
  return when.toDateString() === today.toDateString() ? TIME.format(when) : DAY_TIME.format(when);
}

/** A short local date for an ISO-8601 string: day and month, with the year unless it
 * is this one. */
export function shortDate(iso) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return "";
  return (when.getFullYear() === new Date().getFullYear() ? DAY : DATE).format(when);
}

/** A `<time>` element showing `shortTime(iso)` (the full value as its tooltip). */
export function timeElement(iso, format = shortTime) {
  return h("time", { text: format(iso), attrs: { datetime: iso, title: iso } });
}

/**
 * A button that asks before it acts: the first click shows the question with
 * confirm and cancel buttons in place of the button; confirm runs `action`.
 * No `window.confirm`: the page never opens a dialog.
 */
export function confirmButton({ label, question, confirmLabel, className, action, title }) {
  const holder = h("span", { class: "confirm" });
  const ask = h("button", {
    type: "button",
    class: className || "ghost",
    text: label,
    title: title || label,
    attrs: { "data-role": "ask" },
  });
  const showButton = () => holder.replaceChildren(ask);
  ask.addEventListener("click", () => {
    const yes = h("button", {
      type: "button",
      class: "danger small-button",
      text: confirmLabel,
      attrs: { "data-role": "confirm" },
      on: { click: () => action() },
    });
    const no = h("button", {
      type: "button",
      class: "ghost small-button",
      text: "Cancel",
      attrs: { "data-role": "cancel" },
      on: { click: showButton },
    });
    holder.replaceChildren(h("span", { class: "question", text: question }), yes, no);
    yes.focus();
  });
  showButton();
  return holder;
}
