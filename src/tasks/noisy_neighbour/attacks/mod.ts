// The attacks by name, in the order they run.
import type { AttackName } from "../settings.ts";
import type { Attack } from "./attack.ts";
import { poisonInput } from "./poison_input.ts";
import { freePathFlood } from "./free_path_flood.ts";
import { parseBomb } from "./parse_bomb.ts";
import { silentEndpoint } from "./silent_endpoint.ts";
import { idleSmtp } from "./idle_smtp.ts";
import { invalidTokens } from "./invalid_tokens.ts";
import { cappedKeyIdempotency } from "./capped_key_idempotency.ts";

export type { Attack, AttackContext, AttackOutcome } from "./attack.ts";

export const ATTACK_RUNNERS: Record<AttackName, Attack> = {
  "poison-input": poisonInput,
  "free-path-flood": freePathFlood,
  "parse-bomb": parseBomb,
  "silent-endpoint": silentEndpoint,
  "idle-smtp": idleSmtp,
  "invalid-tokens": invalidTokens,
  "capped-key-idempotency": cappedKeyIdempotency,
};

/** Attacks made by no wallet: no credits to count, no rows of their own in the log. */
export const WALLETLESS: ReadonlySet<AttackName> = new Set(["invalid-tokens", "idle-smtp"]);
