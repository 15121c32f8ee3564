// share.js — the Share button (a snapshot of the current step and selection, link copied, plus a "link to this step"
// that opens the snapshot at exactly this step whatever its stored one) and a snapshot's "Make a copy".
import { stepHash } from "./address.js";
import { copySnapshot, createSnapshot } from "./api.js";

export function bindShare({ button, output }, getState) {
  button.addEventListener("click", async () => {
    const { spec, checkpoint, step, selected } = getState();
    button.disabled = true;
    output.textContent = "Making a link…";
    try {
      const { url } = await createSnapshot(spec, { step, selected: selected || null }, checkpoint || null);
      const link = new URL(url, window.location.origin).href;
      const hash = stepHash(step, selected);
      output.replaceChildren();
      const anchor = document.createElement("a");
      anchor.href = link;
      anchor.textContent = link;
      anchor.dataset.testid = "share-link";
      const stepAnchor = document.createElement("a");
      stepAnchor.href = `${link}#${hash}`;
      stepAnchor.textContent = `link to this step (${step})`;
      stepAnchor.dataset.testid = "share-step-link";
      output.append(anchor, " · ", stepAnchor);
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
