// peak-delta.js — how the peak moved between two runs, in words: "peak 3.2 MiB → 5.9 MiB (+2.7 MiB, activations +2.6 MiB)".
import { formatBytes, signedBytes } from "../lib/format.js";
import { MEMORY_KINDS } from "../lib/palette.js";

const PLURAL = { input: "inputs", param: "params", activation: "activations", grad: "grads", optimizer: "optimizer state" };

export function describePeakDelta(before, after) {
  const was = before.summary.peak_bytes;
  const now = after.summary.peak_bytes;
  const byKind = MEMORY_KINDS.map((kind) => [kind,
    (after.summary.by_kind_at_peak[kind] || 0) - (before.summary.by_kind_at_peak[kind] || 0)]);
  const [kind, change] = byKind.reduce((best, next) => (Math.abs(next[1]) > Math.abs(best[1]) ? next : best));
  const detail = change !== 0 ? `, ${PLURAL[kind]} ${signedBytes(change)}` : "";
  return `peak ${formatBytes(was)} → ${formatBytes(now)} (${signedBytes(now - was)}${detail})`;
}
