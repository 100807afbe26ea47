// @ts-check
// Times to live in human units, both ways: "90s", "15m", "12h", "7d" (or a plain number of seconds)
// to the seconds the key-value API takes, and an expiry time to "in 6 days 23 hours". Pure: the
// clock is passed in.

/** The longest a value lives, and what 0 or no ttl means: 30 days. */
export const MAX_TTL_SECONDS = 30 * 24 * 3600;

const UNIT_SECONDS = /** @type {const} */ ({ s: 1, m: 60, h: 3600, d: 86400 });

/**
 * Seconds from "90s", "15m", "12h", "7d" or "3600"; "" means the maximum (0 to the API).
 * @returns {{ seconds: number } | { error: string }}
 */
export function parseTtl(/** @type {string} */ text) {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === "") return { seconds: 0 };
  const found = /^(\d{1,7})\s*([smhd]?)$/.exec(trimmed);
  if (!found) return { error: `Invalid time to live "${text}": a number and s, m, h or d, e.g. 12h` };
  const unit = /** @type {keyof typeof UNIT_SECONDS} */ (found[2] || "s");
  const seconds = Number(found[1]) * UNIT_SECONDS[unit];
  if (seconds < 1 || seconds > MAX_TTL_SECONDS) {
    return { error: `Invalid time to live "${text}": 1 second to 30 days` };
  }
  return { seconds };
}

/** "in 6 days 23 hours", "in 5 minutes", "expired": the two largest units left. */
export function timeLeft(/** @type {string} */ expiresAt, /** @type {number} */ nowMs) {
  let left = Math.floor((Date.parse(expiresAt) - nowMs) / 1000);
  if (!(left > 0)) return "expired";
  /** @type {string[]} */
  const parts = [];
  for (const [name, size] of /** @type {const} */ ([["day", 86400], ["hour", 3600], ["minute", 60]])) {
    const n = Math.floor(left / size);
    if (n > 0 || parts.length > 0) parts.push(`${n} ${name}${n === 1 ? "" : "s"}`);
    left -= n * size;
  }
  const shown = parts.filter((part) => !part.startsWith("0 ")).slice(0, 2);
  return shown.length === 0 ? "in less than a minute" : `in ${shown.join(" ")}`;
}

/** Bytes as "12 B", "3.4 KiB". */
export function sizeText(/** @type {number} */ bytes) {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`;
}
