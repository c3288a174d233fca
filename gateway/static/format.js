// Exact quantity strings from the API ("1090921693184", "-4", "13.5") made readable.
// Fleet memory in bytes passes 2^53, so amounts are never parsed as floats where
// the figure matters: BigInt does the arithmetic and rounding happens last, for display.

/** The resources the pages show, with their labels. */
export const RESOURCES = [
  ["cpu", "CPU (cores)"],
  ["memory", "Memory"],
];

const BINARY_UNITS = [
  ["TiB", 2n ** 40n, 2],
  ["GiB", 2n ** 30n, 1],
  ["MiB", 2n ** 20n, 0],
  ["KiB", 2n ** 10n, 0],
];

/** "1,234" from "1234": thousands grouped, any fraction kept. */
function group(digits) {
  const [whole, fraction] = digits.split(".");
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return fraction === undefined ? grouped : `${grouped}.${fraction}`;
}

function unsigned(value) {
  return value.replace(/^[-+]/, "");
}

/** Bytes in the largest binary unit that fits, rounded half up: "1016.0 GiB". */
export function formatBytes(value) {
  const bytes = BigInt(unsigned(value).split(".")[0] || "0");
  const sign = value.startsWith("-") && bytes > 0n ? "-" : "";
  for (const [unit, size, decimals] of BINARY_UNITS) {
    if (bytes >= size) return `${sign}${scaled(bytes, size, decimals)} ${unit}`;
  }
  return `${sign}${bytes} B`;
}

function scaled(amount, size, decimals) {
  const factor = 10n ** BigInt(decimals);
  const rounded = (amount * factor * 2n + size) / (2n * size);
  const whole = group((rounded / factor).toString());
  if (decimals === 0) return whole;
  return `${whole}.${(rounded % factor).toString().padStart(decimals, "0")}`;
}

/** An amount of a resource, or "unknown" for null (never 0: unknown is not empty). */
export function formatAmount(resource, value) {
  if (value === null || value === undefined) return "unknown";
  if (resource === "memory") return formatBytes(value);
  if (resource === "cpu") return (value.startsWith("-") ? "-" : "") + group(unsigned(value));
  return value; // DISK_GB, CUSTOM_*: opaque amounts, shown as booked
}

export function formatPercent(ratio) {
  return ratio === null || ratio === undefined ? "unknown" : `${(ratio * 100).toFixed(1)} %`;
}

function fractionDigits(value) {
  return (value.split(".")[1] ?? "").length;
}

function toScaledInteger(value, places) {
  const [whole, fraction = ""] = unsigned(value).split(".");
  const digits = BigInt(whole || "0") * 10n ** BigInt(places);
  const magnitude = digits + BigInt(fraction.padEnd(places, "0") || "0");
  return value.startsWith("-") ? -magnitude : magnitude;
}

/** Compare two exact decimal strings: -1, 0 or 1. */
export function compareDecimal(a, b) {
  const places = Math.max(fractionDigits(a), fractionDigits(b));
  const x = toScaledInteger(a, places);
  const y = toScaledInteger(b, places);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** a - b, exact, as a decimal string; null when either is unknown. */
export function subtract(a, b) {
  if (a === null || a === undefined || b === null || b === undefined) return null;
  const places = Math.max(fractionDigits(a), fractionDigits(b));
  const difference = toScaledInteger(a, places) - toScaledInteger(b, places);
  const sign = difference < 0n ? "-" : "";
  const digits = (difference < 0n ? -difference : difference).toString().padStart(places + 1, "0");
  if (places === 0) return sign + digits;
  return `${sign}${digits.slice(0, -places)}.${digits.slice(-places)}`;
}

/** Group keys (zones...) in name order, the group without one (null) last. */
export function compareKeys(a, b) {
  return a === b ? 0 : a === null ? 1 : b === null ? -1 : a.localeCompare(b);
}

/** A float for drawing only (bar widths), where 2^-53 relative error is invisible. */
export function approximate(value) {
  return value === null || value === undefined ? 0 : Number(value);
}
