// player.js — the step cursor's controls: play/pause, back/forward, start/end, scrub, speed, keyboard; onStep redraws,
// onStop(step) says where playback stopped (the workspace saves that step, never every frame); an optional `counter`
// shows "step / last". `keys: false` leaves the keyboard to the page's main player (a second player, such as the JVP
// sweep's, takes clicks only).

const SPEEDS_PER_SECOND = [1, 2, 4, 8, 16, 30, 60];

export function createPlayer(controls, { onStep, onStop = () => {}, keys = true }) {
  const { play, back, forward, start, end, scrub, speed, counter = null } = controls;
  let step = 0;
  let last = 0;
  let timer = null;

  function setStep(next) {
    const clamped = Math.max(0, Math.min(last, Math.round(next)));
    step = clamped;
    scrub.value = String(clamped);
    scrub.setAttribute("aria-valuetext", `step ${clamped} of ${last}`);
    if (counter) counter.textContent = `${clamped} / ${last}`;     // the step's number in view, whatever its label says
    onStep(clamped);
  }

  function pause() {
    const wasPlaying = timer !== null;
    if (timer !== null) clearInterval(timer);
    timer = null;
    if (wasPlaying) onStop(step);
    play.textContent = "▶ Play";
    play.setAttribute("aria-pressed", "false");
  }

  function resume() {
    if (step >= last) setStep(0);
    const perSecond = Number(speed.value) || 4;
    timer = setInterval(() => {
      if (step >= last) pause();
      else setStep(step + 1);
    }, 1000 / perSecond);
    play.textContent = "❚❚ Pause";
    play.setAttribute("aria-pressed", "true");
  }

  const toggle = () => (timer === null ? resume() : pause());

  for (const perSecond of SPEEDS_PER_SECOND) {
    const option = document.createElement("option");
    option.value = String(perSecond);
    option.textContent = `${perSecond} steps/s`;
    if (perSecond === 4) option.selected = true;
    speed.append(option);
  }
  play.addEventListener("click", toggle);
  back.addEventListener("click", () => { pause(); setStep(step - 1); });
  forward.addEventListener("click", () => { pause(); setStep(step + 1); });
  start.addEventListener("click", () => { pause(); setStep(0); });
  end.addEventListener("click", () => { pause(); setStep(last); });
  scrub.addEventListener("input", () => { pause(); setStep(Number(scrub.value)); });
  speed.addEventListener("change", () => { if (timer !== null) { pause(); resume(); } });

  const typing = (target) => target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']");
  // A field keeps its keys, but a dropdown gives up ← →: "pick a model, then step with ← →" is the page's first
  // instruction, the dropdown keeps the focus after the pick, and ← → there would pick the next model instead (↑ ↓,
  // Home, End and typing still choose in it).
  const fieldOwns = (event) => {
    const field = typing(event.target);
    return Boolean(field) && !(field.matches("select") && (event.key === "ArrowRight" || event.key === "ArrowLeft"));
  };
  if (keys) document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || fieldOwns(event)) return;
    const actions = {
      ArrowRight: () => { pause(); setStep(step + 1); },
      ArrowLeft: () => { pause(); setStep(step - 1); },
      Home: () => { pause(); setStep(0); },
      End: () => { pause(); setStep(last); },
      " ": toggle,
    };
    const action = actions[event.key];
    if (!action) return;
    if (event.key === " " && event.target.closest("button")) return; // the button's own click handles it
    event.preventDefault();
    action();
  });

  return {
    getStep: () => step,
    playing: () => timer !== null,
    setStep,
    pause,
    /** A new trace: the slider's range changes; the step stays where it was when it still exists. */
    reset(lastStep, keepStep) {
      pause();
      last = lastStep;
      scrub.max = String(lastStep);
      setStep(keepStep !== undefined && keepStep <= lastStep ? keepStep : 0);
    },
  };
}
