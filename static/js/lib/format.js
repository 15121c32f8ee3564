// format.js — how numbers, shapes and tensors are written out for people (bytes as KiB/MiB, shapes as [a,b]).

/** Bytes in B/KiB/MiB/GiB: "1.5 KiB", "512 B". With `digits`, up to that many decimals, trailing zeros dropped and
 *  thousands grouped ("1,023.75 MiB"; whole bytes stay whole), as the ledger page writes them. */
export function formatBytes(bytes, { digits } = {}) {
  const sign = bytes < 0 ? "-" : "";
  let value = Math.abs(bytes);
  const units = ["B", "KiB", "MiB", "GiB"];
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  if (digits !== undefined) {
    const text = value.toLocaleString("en-US", { maximumFractionDigits: unit === 0 ? 0 : digits, minimumFractionDigits: 0 });
    return `${sign}${text} ${units[unit]}`;
  }
  const fixed = unit === 0 || value >= 100 ? 0 : 1;
  return `${sign}${value.toFixed(fixed)} ${units[unit]}`;
}

const GROUPED = new Intl.NumberFormat("en-US");     // one formatter: toLocaleString builds one per call (~30 µs)

/** A whole count with thousands grouped: "68,736,253,952". */
export const formatCount = (n) => GROUPED.format(Number(n));

/** Bytes both ways, for a panel that states one tensor's or one transfer's size: "1.5 KiB (1,536 B)"; under a KiB
 *  the bytes once ("512 B", not "512 B (512 B)"). */
export const exactBytes = (bytes) => (Math.abs(bytes) < 1024 ? formatBytes(bytes) : `${formatBytes(bytes)} (${formatCount(bytes)} B)`);

export const signedBytes = (bytes) => (bytes >= 0 ? "+" : "") + formatBytes(bytes);

export const formatShape = (shape) => `[${shape.join(",")}]`;

export const tensorLabel = (tensor) => `${tensor.name} ${formatShape(tensor.shape)}`;

export function formatNumber(value) {
  if (value === null || value === undefined) return "—";
  if (value === 0) return "0";
  const magnitude = Math.abs(value);
  return magnitude >= 1e4 || magnitude < 1e-3 ? value.toExponential(3) : value.toPrecision(4);
}
