// The side panels: on a wide screen the conversations sit beside the chat and the
// memory panel opens as a third column; below 800 px both are overlays opened from the
// header, closed by their buttons, by Escape, or (the sidebar) by a tap on the chat.

const narrow = window.matchMedia("(max-width: 800px)");
let layout = null;

function button(id) {
  return document.getElementById(id);
}

function setSidebarOpen(open) {
  layout.classList.toggle("sidebar-open", open);
  button("toggle-sidebar").setAttribute("aria-expanded", String(open));
}

function setMemoryOpen(open) {
  button("memory-panel").hidden = !open;
  layout.classList.toggle("memory-open", open);
  button("toggle-memory").setAttribute("aria-expanded", String(open));
}

/** Close the sidebar overlay of a narrow screen (a conversation was chosen). */
export function closeSidebarOnNarrow() {
  if (layout && narrow.matches) setSidebarOpen(false);
}

/** Close the memory panel's overlay of a narrow screen (a line it links to was opened). */
export function closeMemoryOnNarrow() {
  if (layout && narrow.matches) setMemoryOpen(false);
}

/** Wire the panel toggles of `root` (the page's layout element). */
export function installPanels(root) {
  layout = root;
  const memoryPanel = button("memory-panel");
  button("toggle-sidebar").addEventListener("click", () =>
    setSidebarOpen(!layout.classList.contains("sidebar-open")),
  );
  button("toggle-memory").addEventListener("click", () => setMemoryOpen(memoryPanel.hidden));
  button("close-memory").addEventListener("click", () => setMemoryOpen(false));
  button("messages").addEventListener("click", closeSidebarOnNarrow);
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    if (layout.classList.contains("sidebar-open")) setSidebarOpen(false);
    else if (narrow.matches && !memoryPanel.hidden) setMemoryOpen(false);
  });
}
