// What `deno task noisy-neighbour` runs: its variables (NOISY_SECONDS, NOISY_SETTLE_SECONDS,
// NOISY_ONLY), read once and checked, and the fixed client counts that bound its load.

/** The attacks, in the order they run (issue 21, "What was measured"). */
export const ATTACKS = [
  "poison-input",
  "free-path-flood",
  "parse-bomb",
  "silent-endpoint",
  "idle-smtp",
  "invalid-tokens",
  "capped-key-idempotency",
] as const;
export type AttackName = typeof ATTACKS[number];

/** Fixed client counts: the load is bounded whatever the machine. */
export const LOAD = {
  /** The victim's concurrent KV clients (closed loop, POST then GET of its own key). */
  victimKvClients: 8,
  /** The victim's mail: one message every this many ms, each on its own SMTP session. */
  victimMailEveryMs: 500,
  /** Attack 1: clients sending poison input. */
  poisonClients: 4,
  /** Attack 2: connections of the free-path flood (as the issue measured: 8). */
  floodConnections: 8,
  /** Attack 3: senders of parse bombs (as the issue measured: 6). */
  bombSenders: 6,
  /** Attack 4: mails that fail first and are then recovered onto the silent endpoint. */
  silentMails: 100,
  /** Attack 5: most idle sessions tried per attacking address. */
  idleSessionsPerAddress: 100,
  /** Attack 6: connections of the invalid-token flood. */
  invalidTokenConnections: 8,
  /** Attack 7: clients reusing the capped key's Idempotency-Key. */
  idempotencyClients: 4,
} as const;

export interface NoisySettings {
  /** Measured seconds of each phase. */
  seconds: number;
  /** Seconds of pause between windows, before the wait for the service to be quiet. */
  settleSeconds: number;
  /** The attacks to run, in order. */
  attacks: AttackName[];
}

function wholeNumber(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  range: [number, number],
) {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < range[0] || value > range[1]) {
    throw new Error(
      `Invalid ${name} "${raw}": must be a whole number of seconds from ${range[0]} to ${range[1]}`,
    );
  }
  return value;
}

/** The settings from the environment; throws with the variable's rule on a bad value. */
export function noisySettings(env: Record<string, string | undefined>): NoisySettings {
  const only = env.NOISY_ONLY;
  let attacks: AttackName[] = [...ATTACKS];
  if (only !== undefined && only.trim() !== "") {
    const picked = only.split(",").map((name) => name.trim());
    for (const name of picked) {
      if (!ATTACKS.includes(name as AttackName)) {
        throw new Error(
          `Invalid NOISY_ONLY attack "${name.slice(0, 40)}": must be one of ${ATTACKS.join(", ")}`,
        );
      }
    }
    attacks = ATTACKS.filter((name) => picked.includes(name));
  }
  return {
    seconds: wholeNumber(env, "NOISY_SECONDS", 10, [3, 120]),
    settleSeconds: wholeNumber(env, "NOISY_SETTLE_SECONDS", 1, [0, 60]),
    attacks,
  };
}
