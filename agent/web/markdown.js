// Answers and reports as Markdown. `marked` (vendored) parses the text with any raw HTML
// in it shown as text, never as markup; DOMPurify (vendored) then keeps only a small
// set of tags and attributes, and the result is handed over as DOM nodes (no string
// of HTML is ever assigned). Links keep only http, https and mailto addresses and open
// in a new tab with neither an opener nor a referrer; images are shown as links, so
// nothing is fetched from another origin (the page's policy would refuse it anyway).

import { Marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.js";

const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);
const ALLOWED_TAGS = [
  "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
  "li", "ol", "p", "pre", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
];
const ALLOWED_ATTR = ["href", "title", "align", "start"];

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** Whether `href` is an absolute http(s) or mailto address (nothing else is kept). */
export function safeHref(href) {
  const value = String(href || "").trim();
  if (!/^(https?:\/\/|mailto:)/i.test(value)) return false;
  try {
    return SAFE_SCHEMES.has(new URL(value).protocol);
  } catch {
    return false;
  }
}

const markdown = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    // raw HTML in the text is text: shown, never parsed
    html({ text }) {
      return escapeHtml(text);
    },
    // an image becomes a link to it (its alt text as the label): nothing is loaded
    image({ href, text }) {
      const label = escapeHtml(text || href || "image");
      return `<a href="${escapeHtml(href || "")}">${label}</a>`;
    },
  },
});

const purifier = DOMPurify(window);
purifier.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName !== "A") return;
  const href = node.getAttribute("href");
  if (href === null || !safeHref(href)) {
    node.removeAttribute("href"); // the label stays, as plain text
    return;
  }
  node.setAttribute("target", "_blank");
  node.setAttribute("rel", "noopener noreferrer");
});

/**
 * `text` as Markdown, sanitised: a fragment to append (text and safe elements only).
 * @param {string} text
 * @returns {DocumentFragment}
 */
export function renderMarkdown(text) {
  const html = markdown.parse(String(text || ""), { async: false });
  return purifier.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
}
