// The sidebar: the session's conversations (newest activity first, as the server
// orders them), the "New chat" draft, deletion with confirmation, and the switch lock
// while a reply streams.

import { clear, confirmButton, h, timeElement } from "./dom.js";

export class Sidebar {
  /**
   * @param {{onSelect: (id: string) => void, onDelete: (id: string) => void, onNew: () => void}} actions
   */
  constructor(actions) {
    this.actions = actions;
    this.list = document.getElementById("conversation-list");
    this.count = document.getElementById("conversation-count");
    this.lock = document.getElementById("switch-lock");
    this.newChat = document.getElementById("new-chat");
    this.newChat.addEventListener("click", () => actions.onNew());
    this.locked = false;
  }

  /**
   * Show the conversations.
   * @param {{conversations: {id: string, title: string, lastActiveAt: string}[], limit: number}} registry
   * @param {string|null} currentId the conversation on screen (null: a draft)
   */
  render(registry, currentId) {
    this.registry = registry;
    this.currentId = currentId;
    clear(this.list);
    for (const entry of registry.conversations) {
      const current = entry.id === currentId;
      const open = h(
        "button",
        {
          type: "button",
          class: "conversation-open",
          title: entry.title,
          on: { click: () => this.actions.onSelect(entry.id) },
          attrs: current ? { "aria-current": "true" } : {},
        },
        h("span", { class: "conversation-title", text: entry.title }),
        h(
          "span",
          { class: "conversation-meta" },
          timeElement(entry.lastActiveAt),
          entry.unfinished
            ? h("span", { class: "badge", text: "unfinished", title: "A run stopped midway" })
            : null,
          entry.reviewPending
            ? h("span", {
                class: "badge review-badge",
                text: "review pending",
                title: "A task list waits for your review",
              })
            : null,
        ),
      );
      const remove = confirmButton({
        label: "×",
        title: "Delete this conversation",
        question: "Delete?",
        confirmLabel: "Delete",
        className: "ghost conversation-delete",
        action: () => this.actions.onDelete(entry.id),
      });
      this.list.append(
        h(
          "li",
          {
            class: current ? "conversation current" : "conversation",
            attrs: { "data-id": entry.id },
          },
          open,
          remove,
        ),
      );
    }
    const n = registry.conversations.length;
    this.count.textContent = n
      ? `${n} of ${registry.limit} conversations kept; past that, ` +
        "the least recently active one is removed from the list (search still finds " +
        "its lines until the retention period ends)."
      : "No conversations yet: your first message starts one.";
    this.applyLock();
  }

  /**
   * Lock or unlock switching. While a reply streams the conversation cannot be left:
   * a turn's memory is written to the conversation it started in, and the page shows
   * one conversation at a time.
   * @param {string|null} reason shown in the sidebar; null unlocks
   */
  setLock(reason) {
    this.locked = Boolean(reason);
    this.lock.textContent = reason || "";
    this.lock.hidden = !reason;
    // re-rendered, not just disabled: a delete confirmation left open would stay usable
    if (this.registry) this.render(this.registry, this.currentId);
    else this.applyLock();
  }

  applyLock() {
    this.newChat.disabled = this.locked;
    for (const button of this.list.querySelectorAll("button")) button.disabled = this.locked;
  }
}
