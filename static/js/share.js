// share.js — the Share button (a snapshot of the current step and selection, link copied) and a snapshot's "Make a copy".
import { copySnapshot, createSnapshot } from "./api.js";

export function bindShare({ button, output }, getState) {
  button.addEventListener("click", async () => {
    const { spec, checkpoint, step, selected } = getState();
    button.disabled = true;
    output.textContent = "Making a link…";
    try {
      const { url } = await createSnapshot(spec, { step, selected: selected || null }, checkpoint || null);
      const link = new URL(url, window.location.origin).href;
      output.replaceChildren();
      const anchor = document.createElement("a");
      anchor.href = link;
      anchor.textContent = link;
      anchor.dataset.testid = "share-link";
      output.append(anchor);
      try {
        await navigator.clipboard.writeText(link);
        output.append(" (copied)");
      } catch { /* clipboard not permitted: the link is on screen to copy by hand */ }
    } catch (error) {
      output.textContent = `Could not share: ${error.message}`;
    } finally {
      button.disabled = false;
    }
  });
}

/** "Make a copy": the server's sentence (a 429 rate limit, a 507 full disk) is shown when it refuses. */
export function bindMakeCopy(button, snapshotId, output) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await copySnapshot(snapshotId);
      window.location.assign("/");
    } catch (error) {
      output.textContent = `Could not copy: ${error.message}`;
      button.disabled = false;
    }
  });
}
