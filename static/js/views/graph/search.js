// search.js — the graph's search box: a tensor name, an op or a scope lights up the matching nodes; Enter zooms
// to the first match (again: the next one), Escape clears. Matching is a substring test on each node's search text.

/** controls: {search: <input>, searchCount: <output>}; nodes(): the drawn node models; onMatches(): restyle;
 * onGo(nodeId): bring a node into view. */
export function createSearch(controls, { nodes, onMatches, onGo }) {
  const input = controls.search;
  let matched = new Set();
  let order = [];
  let cursor = -1;

  function run() {
    const query = input.value.trim().toLowerCase();
    order = query ? nodes().filter((n) => n.searchText.includes(query)).map((n) => n.id) : [];
    matched = new Set(order);
    cursor = -1;
    if (controls.searchCount) {
      controls.searchCount.textContent = query ? (order.length ? `${order.length} match${order.length === 1 ? "" : "es"}` : "no match") : "";
    }
    input.classList.toggle("no-match", Boolean(query) && !order.length);
    onMatches();
  }

  if (input) {
    input.addEventListener("input", run);
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && order.length) {
        event.preventDefault();
        cursor = (cursor + 1) % order.length;
        onGo(order[cursor]);
      } else if (event.key === "Escape") {
        input.value = "";
        run();
      }
    });
  }
  return {
    matches: (nodeId) => matched.has(nodeId),
    /** A new graph: the same query against its nodes. */
    refresh: () => { if (input?.value) run(); else if (matched.size) { matched = new Set(); order = []; } },
  };
}
