// byte-axis.js — Plotly axis ticks in binary units (B, KiB, MiB, GiB), as the header writes bytes, instead of Plotly's kB/MB.

const UNITS = [["GiB", 1024 ** 3], ["MiB", 1024 ** 2], ["KiB", 1024], ["B", 1]];

/** A round step near `rough`: 1, 2, 2.5 or 5 times a power of ten. */
function niceStep(rough) {
  const power = 10 ** Math.floor(Math.log10(rough));
  const scaled = rough / power;
  const factor = scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 2.5 ? 2.5 : scaled <= 5 ? 5 : 10;
  return factor * power;
}

/** {tickvals, ticktext} from 0 to at least `maxBytes`, about `count` intervals, in the largest unit that fits. */
export function binaryTicks(maxBytes, count = 4) {
  const top = Math.max(1, maxBytes);
  const [unit, size] = UNITS.find(([, s]) => top >= s) ?? UNITS[UNITS.length - 1];
  const step = unit === "B" ? Math.max(1, Math.round(niceStep(top / count))) : niceStep(top / size / count);
  const tickvals = [];
  const ticktext = [];
  for (let i = 0; i * step * size <= top * 1.0001 + step * size; i += 1) {
    const value = i * step;
    tickvals.push(Math.round(value * size));
    ticktext.push(value === 0 ? "0" : `${parseFloat(value.toFixed(3))} ${unit}`);
  }
  return { tickvals, ticktext };
}

/** A Plotly y axis of bytes with binary ticks: spread it into the layout's yaxis. */
export function byteAxis(maxBytes, extra = {}) {
  const { tickvals, ticktext } = binaryTicks(maxBytes);
  return { tickmode: "array", tickvals, ticktext, rangemode: "tozero", ...extra };
}
