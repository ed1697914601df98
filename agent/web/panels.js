// The side panels: on a wide screen the conversations sit beside the chat and the
// memory panel opens as a third column; below 800 px each is an overlay opened from the
// header, one at a time, over a scrim, closed by its × button, by a tap on the scrim
// or by Escape.

const narrow = window.matchMedia("(max-width: 800px)");
let layout = null;

function button(id) {
  return document.getElementById(id);
}

function showScrim() {
  const overlay = narrow.matches && (sidebarOpen() || memoryOpen());
  button("scrim").hidden = !overlay;
}

function sidebarOpen() {
  return layout.classList.contains("sidebar-open");
}

function memoryOpen() {
  return !button("memory-panel").hidden;
}

function setSidebarOpen(open) {
  // an overlay covers the header: the other one closes first, never stacked under it
  if (open && narrow.matches && memoryOpen()) setMemoryOpen(false);
  layout.classList.toggle("sidebar-open", open);
  button("toggle-sidebar").setAttribute("aria-expanded", String(open));
  showScrim();
}

function setMemoryOpen(open) {
  if (open && narrow.matches && sidebarOpen()) setSidebarOpen(false);
  button("memory-panel").hidden = !open;
  layout.classList.toggle("memory-open", open);
  button("toggle-memory").setAttribute("aria-expanded", String(open));
  showScrim();
}

/** Close the sidebar overlay of a narrow screen (a conversation was chosen). */
export function closeSidebarOnNarrow() {
  if (layout && narrow.matches) setSidebarOpen(false);
}

/** Close the memory panel's overlay of a narrow screen (a line it links to was opened). */
export function closeMemoryOnNarrow() {
  if (layout && narrow.matches) setMemoryOpen(false);
}

function closeOverlays() {
  if (!narrow.matches) return;
  if (sidebarOpen()) setSidebarOpen(false);
  if (memoryOpen()) setMemoryOpen(false);
}

/** Wire the panel toggles of `root` (the page's layout element). */
export function installPanels(root) {
  layout = root;
  button("toggle-sidebar").addEventListener("click", () => setSidebarOpen(!sidebarOpen()));
  button("toggle-memory").addEventListener("click", () => setMemoryOpen(!memoryOpen()));
  button("close-memory").addEventListener("click", () => setMemoryOpen(false));
  button("close-sidebar").addEventListener("click", () => setSidebarOpen(false));
  button("scrim").addEventListener("click", closeOverlays);
  button("messages").addEventListener("click", closeSidebarOnNarrow);
  narrow.addEventListener("change", showScrim);
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    if (sidebarOpen()) setSidebarOpen(false);
    else if (narrow.matches && memoryOpen()) setMemoryOpen(false);
  });
}
