// allocator.js — the CUDA caching allocator's figures of a run imported with --allocator (summary.allocator and each
// step's reserved_bytes, replayed by backend/trace/cuda_allocator.py), and the words that say what they mean; null
// for a run without them.
export const RESERVED_NAME = "reserved (CUDA caching allocator)";

/** Why the reserved line sits above the allocated bytes, in one sentence. */
export const RESERVED_WHY = "Reserved ≥ allocated: the allocator takes whole 2 MiB and 20 MiB segments from the GPU, "
  + "rounds each tensor up to 512 B and keeps freed blocks cached for reuse, so a GPU must hold the reserved line, "
  + "not only the live tensors.";

/** The allocator's numbers, or null when the document has none. */
export function allocatorFigures(doc) {
  const allocator = doc.summary.allocator;
  if (!allocator || doc.summary.reserved_peak_bytes == null) return null;
  return {
    expandable: allocator.expandable_segments,
    reservedPeakBytes: doc.summary.reserved_peak_bytes,
    reservedPeakStep: doc.summary.reserved_peak_step,
    allocatedPeakBytes: allocator.allocated_peak_bytes,
    allocatedPeakStep: allocator.allocated_peak_step,
    inactiveBytes: allocator.inactive_at_reserved_peak_bytes,
    largestFreeBytes: allocator.largest_free_at_reserved_peak_bytes,
    segments: allocator.segments_made,
  };
}

/** Each step's reserved bytes, or null when the steps carry none. */
export function reservedSeries(doc) {
  if (!doc.steps.length || doc.steps.some((step) => step.reserved_bytes == null)) return null;
  return doc.steps.map((step) => step.reserved_bytes);
}

/** The figures as rows a reader asks in turn: the peak the GPU must hold, what is in use then, what is held but idle,
 * and how that idle memory is split. key: a stable name; bytes: false for a count. */
export function allocatorRows(figures) {
  return [
    { key: "reserved-peak", label: "reserved peak", value: figures.reservedPeakBytes, bytes: true,
      words: `at step ${figures.reservedPeakStep} — what the GPU must hold` },
    { key: "allocated-peak", label: "allocated peak", value: figures.allocatedPeakBytes, bytes: true,
      words: `at step ${figures.allocatedPeakStep} — the live tensors, each rounded up to 512 B` },
    { key: "inactive", label: "reserved, not in use", value: figures.inactiveBytes, bytes: true,
      words: "at the reserved peak — cached free blocks (fragmentation)" },
    { key: "largest-free", label: "largest free block", value: figures.largestFreeBytes, bytes: true,
      words: "at the reserved peak — the biggest tensor it fits without a new segment" },
    { key: "segments", label: figures.expandable ? "expandable segments" : "segments", value: figures.segments,
      bytes: false, words: figures.expandable ? "grown page by page (expandable_segments:True)" : "cudaMalloc calls" },
  ];
}
