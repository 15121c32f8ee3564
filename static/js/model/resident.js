// resident.js — the training state of a run, split by part (the trace's summary.resident): fp32 master weights, their
// low-precision copies (the most alive at once), gradients and optimizer state, and the bytes per parameter that persist between
// steps (16 for fp32 Adam, 10 for adam8bit). Under accumulate and precision it also names the micro-batches and the
// loss scaler's step.
import { formatBytes, formatCount } from "../lib/format.js";

export function residentText(doc) {
  const resident = doc.summary.resident;
  if (!resident || !resident.params) return "";
  const precision = doc.spec.precision;
  const parts = [
    `${precision ? "master weights" : "weights"} ${formatBytes(resident.master_weights_bytes)}`,
    ...(precision ? [`${precision.compute} copies up to ${formatBytes(resident.weight_copies_bytes)}`] : []),
    `grads ${formatBytes(resident.grads_bytes)}`,
    `optimizer state ${formatBytes(resident.optimizer_state_bytes)}`,
  ];
  let text = `Resident: ${parts.join(" · ")} — ${resident.bytes_per_param.toFixed(resident.bytes_per_param % 1 ? 3 : 0)} B per parameter ` +
    `(${formatCount(resident.params)} parameters).`;
  if (doc.summary.micro_batches > 1) text += ` ${doc.summary.micro_batches} micro-batches of ${doc.spec.batch / doc.summary.micro_batches} rows, one step.`;
  const scaler = doc.summary.loss_scale;
  if (scaler) {
    text += ` Loss scale ${formatCount(scaler.scale)}` + (scaler.skipped_step ? ": inf/NaN in the gradients, step skipped" : "") +
      (scaler.next_scale !== scaler.scale ? `, next ${formatCount(scaler.next_scale)}.` : ".");
  }
  return text;
}
