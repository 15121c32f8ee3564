// palette.js — the Okabe–Ito color-blind-safe colors for op families and memory kinds, in one place.

const OKABE_ITO = {
  orange: "#E69F00", sky: "#56B4E9", green: "#009E73", yellow: "#F0E442",
  blue: "#0072B2", vermillion: "#D55E00", purple: "#CC79A7", grey: "#999999", black: "#000000",
};

export const FAMILY_COLORS = {
  matmul: OKABE_ITO.blue, binary: OKABE_ITO.sky, elementwise: OKABE_ITO.green, reduce: OKABE_ITO.orange,
  normalization: OKABE_ITO.purple, loss: OKABE_ITO.vermillion, movement: OKABE_ITO.grey, random: OKABE_ITO.yellow,
  checkpoint: "#e5e7eb",   // a neutral box: a checkpoint stands for a region of ops, not one op of its own
  collective: OKABE_ITO.black,   // ranks communicating (all-reduce, all-gather, ...): square, with a dashed frame
};

export const familyColor = (family) => FAMILY_COLORS[family] || OKABE_ITO.grey;

// The memory kinds, in backend/trace/memory_kinds.py's order (tests/trace/test_memory_kinds.py checks both lists and a colour each).
export const MEMORY_KINDS = ["input", "param", "weight_copy", "activation", "grad", "optimizer", "workspace",
  "unsharded_param", "unsharded_grad", "comm_buffer"];

export const KIND_COLORS = {
  input: OKABE_ITO.grey, param: OKABE_ITO.blue, activation: OKABE_ITO.orange,
  grad: OKABE_ITO.vermillion, optimizer: OKABE_ITO.purple, weight_copy: OKABE_ITO.sky,
  workspace: OKABE_ITO.yellow,
  // a rank's sharding (issue 29) — unsharded parameters green beside the params' blue, unsharded gradients a light
  // vermillion, the collectives' buffers black as the collectives are
  unsharded_param: OKABE_ITO.green, unsharded_grad: "#F2B38C", comm_buffer: OKABE_ITO.black,
};
