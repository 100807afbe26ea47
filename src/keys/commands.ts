// The key-management decisions (POST, GET and DELETE /token/keys), pure: from the wallet's keys as
// the batch sees them and the time, the reply and the events. The key itself and its hash are drawn
// before the command is built; only the hash enters the log.
import { newEvent } from "../../events/catalogue.ts";
import type { KeyScope, ScopedKeyRow } from "../../projections/scoped_keys.ts";
import type { CallDecision } from "../ledger/command.ts";
import { answer, failure, jsonReply, type Reply, textReply } from "../calls/reply.ts";
import { randomId, randomLowerId, sha256Hex } from "../ids.ts";
import { quoteInput } from "../storable_text.ts";

/** Keys a wallet may hold that are neither revoked nor expired. */
export const MAX_ACTIVE_KEYS = 100;
export const KEY_PREFIX = "k_";
const KEY_RANDOM_CHARS = 32;
const KEY_ID_PREFIX = "key_";
const KEY_ID_RANDOM_CHARS = 16;

/** A key as the client asked for it, checked against the input schema already. */
export interface KeyRequest {
  name: string;
  scope: KeyScope;
  buckets?: string[];
  spendCap?: number;
  expiresAt?: string;
}

/** A fresh key: its id, the secret shown once, and the SHA-256 the service keeps. */
export interface KeyMaterial {
  keyId: string;
  secret: string;
  hash: string;
}

export async function newKeyMaterial(): Promise<KeyMaterial> {
  const secret = KEY_PREFIX + randomId(KEY_RANDOM_CHARS);
  return { keyId: KEY_ID_PREFIX + randomLowerId(KEY_ID_RANDOM_CHARS), secret, hash: await sha256Hex(secret) };
}

/** Whether a presented token is a scoped key rather than a wallet token (those have no "_"). */
export function isScopedKey(token: string): boolean {
  return token.startsWith(KEY_PREFIX);
}

export type KeyState = "active" | "expired" | "revoked";

function stateOf(key: ScopedKeyRow, now: Date): KeyState {
  if (key.revoked_at) return "revoked";
  if (key.expires_at && key.expires_at.getTime() <= now.getTime()) return "expired";
  return "active";
}

/** A key as GET /token/keys shows it: never the secret nor its hash. */
export function keyView(key: ScopedKeyRow, now: Date) {
  return {
    id: key.key_id,
    name: key.name,
    scope: key.scope,
    ...(key.buckets ? { buckets: key.buckets } : {}),
    ...(key.spend_cap !== null ? { spendCap: key.spend_cap } : {}),
    ...(key.expires_at ? { expiresAt: key.expires_at.toISOString() } : {}),
    createdAt: key.created_at.toISOString(),
    spent: key.spent,
    lastUsedAt: key.last_used_at?.toISOString() ?? null,
    ...(key.revoked_at ? { revokedAt: key.revoked_at.toISOString() } : {}),
    state: stateOf(key, now),
  };
}

/** POST /token/keys: a new key, unless its expiry is past or the wallet holds the most keys. */
export function createKey(
  request: KeyRequest,
  { material, keys, now }: { material: KeyMaterial; keys: Map<string, ScopedKeyRow> | undefined; now: Date },
): CallDecision<Reply> {
  if (request.expiresAt !== undefined && Date.parse(request.expiresAt) <= now.getTime()) {
    return failure(400, `Invalid expiresAt ${quoteInput(request.expiresAt)}: must be in the future`);
  }
  const active = [...(keys?.values() ?? [])].filter((key) => stateOf(key, now) === "active").length;
  if (active >= MAX_ACTIVE_KEYS) {
    return failure(
      400,
      `Too many keys: a wallet holds at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`,
    );
  }
  const buckets = request.buckets ? [...new Set(request.buckets)] : undefined;
  const expiresAt = request.expiresAt ? new Date(request.expiresAt).toISOString() : undefined;
  const created = newEvent("KeyCreated", {
    keyId: material.keyId,
    name: request.name,
    hash: material.hash,
    scope: request.scope,
    ...(buckets ? { buckets } : {}),
    ...(request.spendCap !== undefined ? { spendCap: request.spendCap } : {}),
    ...(expiresAt ? { expiresAt } : {}),
  });
  return answer(
    jsonReply(200, {
      id: material.keyId,
      key: material.secret,
      name: request.name,
      scope: request.scope,
      ...(buckets ? { buckets } : {}),
      ...(request.spendCap !== undefined ? { spendCap: request.spendCap } : {}),
      ...(expiresAt ? { expiresAt } : {}),
      createdAt: now.toISOString(),
    }),
    { events: [created] },
  );
}

/**
 * What an Idempotency-Key keeps of a created key: never the secret, which is shown once. A retry
 * learns which key the first request made, so it can revoke it and make another.
 */
export function keptCreation(reply: Reply): Reply {
  if (reply.status !== 200) return reply;
  const { id } = JSON.parse(reply.body) as { id: string };
  return textReply(
    409,
    `Key "${id}" was already created with this Idempotency-Key; its secret is shown only once: ` +
      "revoke it and create another",
  );
}

/** GET /token/keys: every key, oldest first, with its spend and last use. */
export function listKeys(keys: Map<string, ScopedKeyRow> | undefined, now: Date): CallDecision<Reply> {
  const ordered = [...(keys?.values() ?? [])].sort((a, b) =>
    a.created_at.getTime() - b.created_at.getTime() || (a.key_id < b.key_id ? -1 : 1)
  );
  return answer(jsonReply(200, { keys: ordered.map((key) => keyView(key, now)) }));
}

/** DELETE /token/keys/{id}: KeyRevoked; a key revoked already stays so, and answers OK again. */
export function revokeKey(keyId: string, key: ScopedKeyRow | undefined): CallDecision<Reply> {
  if (!key) return failure(404, `Key ${quoteInput(keyId)} not found`);
  if (key.revoked_at) return answer(textReply(200, "OK"));
  return answer(textReply(200, "OK"), { events: [newEvent("KeyRevoked", { keyId })] });
}
