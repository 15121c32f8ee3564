// share.js — the Share button (a snapshot of the current step and selection, link copied, plus a "link to this step"
// that opens the snapshot at exactly this step whatever its stored one), "Share this run" for a run.json opened from
// a file (the document itself posted to /api/traces, the one upload the page makes of it), and a snapshot's "Make a copy".
import { stepHash } from "../../state/address.js";
import * as workspace from "../../state/workspace.js";

/** The link (and one to this step) in `output`, copied to the clipboard when the browser lets us. */
async function showLink(output, url, step, selected, rank = null) {
  const link = new URL(url, window.location.origin).href;
  output.replaceChildren();
  const anchor = document.createElement("a");
  anchor.href = link;
  anchor.textContent = new URL(link).pathname;       // the whole address is copied and in the title: the toolbar
  anchor.title = link;                                // keeps to one line at 1920 px, two at 1280
  anchor.dataset.testid = "share-link";
  const stepAnchor = document.createElement("a");
  stepAnchor.href = `${link}#${stepHash(step, selected, null, rank)}`;
  stepAnchor.textContent = Number.isInteger(rank) ? `link to this step (${step}) of rank ${rank}` : `link to this step (${step})`;
  stepAnchor.dataset.testid = "share-step-link";
  output.append(anchor, " · ", stepAnchor);
  try {
    await navigator.clipboard.writeText(link);
    output.append(" (copied)");
  } catch { /* clipboard not permitted: the link is on screen to copy by hand */ }
}

/** One click: `makeLink()` resolves to {url}; the button waits, and a refusal shows the server's sentence. */
function bindLinkButton(button, output, makeLink, getView) {
  button.addEventListener("click", async () => {
    const { step, selected, rank } = getView();
    button.disabled = true;
    output.textContent = "Making a link…";
    try {
      const { url } = await makeLink();
      await showLink(output, url, step, selected, rank);
    } catch (error) {
      const where = error.problems?.length ? ` (${error.problems.slice(0, 3).map((p) => p.path).join(", ")})` : "";
      output.textContent = `Could not share: ${error.message}${where}`;
    } finally {
      button.disabled = false;
    }
  });
}

/** Share: getView() -> {step, selected}; the workspace makes the snapshot of the model on screen. */
export function bindShare({ button, output }, getView) {
  bindLinkButton(button, output, () => workspace.shareSnapshot(getView()), getView);
}

/** "Share this run": the workspace posts the run.json opened here; the server checks it before storing it. */
export function bindShareRun({ button, output }, getView) {
  bindLinkButton(button, output, () => workspace.shareOpenedRun(), getView);
}

/** "Make a copy": the server's sentence (a 429 rate limit, a 507 full disk) is shown when it refuses. */
export function bindMakeCopy(button, snapshotId, output) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await workspace.copySnapshot(snapshotId);
      window.location.assign("/");
    } catch (error) {
      output.textContent = `Could not copy: ${error.message}`;
      button.disabled = false;
    }
  });
}
