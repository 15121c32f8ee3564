// half.js — decodes the trace's base64 little-endian float16 value arrays into plain numbers.

function halfToFloat(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

export function decodeHalfs(base64) {
  const raw = atob(base64);
  const values = new Array(raw.length >> 1);
  for (let i = 0; i < values.length; i += 1) {
    values[i] = halfToFloat(raw.charCodeAt(2 * i) | (raw.charCodeAt(2 * i + 1) << 8));
  }
  return values;
}

/** Values as rows for a heatmap: the last axis across, everything before it stacked down. */
export function asRows(values, shape) {
  const columns = shape.length ? shape[shape.length - 1] || 1 : 1;
  const rows = [];
  for (let start = 0; start < values.length; start += columns) rows.push(values.slice(start, start + columns));
  return rows;
}
