// Presented tokens and keys that name nothing cost the database little: a bounded cache of the
// hashes it said are unknown answers 401 again without a query, and each client (its network) has
// a budget of lookups that find nothing, past which a token not known here gets 429 without one.
//
// The cache is safe because tokens and keys are random and their hash is stored before they are
// handed out: a hash that named nothing cannot name something later. The exceptions are a wallet
// or key that appears by another way than its creation call (rows inserted by hand, a database
// restored or replicated from a later point than the one this instance read), and a revoked key
// swept after its retention (it turns from "Key revoked" to "Unauthorized"). The age bounds them.
import { HttpError } from "./errors.ts";
import { RecentCache } from "../calls/wallet_cache.ts";
import { KeyedRateLimit, retryAfterSeconds } from "../calls/rate_limit.ts";
import { TOO_MANY_REQUESTS, UNAUTHORIZED } from "../calls/reply.ts";

const UNKNOWN_KEPT = 10_000;
const UNKNOWN_AGE_MS = 10 * 60_000;
const CLIENTS_KEPT = 10_000;

/** Hashes that named no active wallet, or a revoked key: the phrase of their 401. */
export const unknownTokens = new RecentCache<string>(UNKNOWN_KEPT, UNKNOWN_AGE_MS);

let budget: KeyedRateLimit | undefined;

/** The budget of lookups per client, one per process (made again if the configured rate changes). */
function lookupBudget(perMinute: number): KeyedRateLimit {
  if (budget?.options.perWindow !== perMinute) {
    budget = new KeyedRateLimit({ perWindow: perMinute, windowMs: 60_000, maxKeys: CLIENTS_KEPT });
  }
  return budget;
}

export interface Presented<T> {
  /** SHA-256 of the presented token or key. */
  hash: string;
  /** The client's network (client_network.ts). */
  client: string;
  /** UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE. */
  lookupsPerMinute: number;
  /** The database lookup: what the hash names, or undefined. */
  find(): Promise<T | undefined>;
  /** The 401 phrase of what was found but may not authenticate (a revoked key), or undefined. */
  refusalOf?(found: T): string | undefined;
}

/**
 * What a hash not cached as active names, through the cache of unknown hashes and the client's
 * budget: 401 for a hash known to name nothing, 429 with Retry-After past the budget. A lookup that
 * finds something gives its share of the budget back, so valid tokens never spend it; one that
 * fails (the database out) keeps it spent.
 */
export async function lookUpPresented<T>(presented: Presented<T>): Promise<T> {
  const { hash, client } = presented;
  const refused = unknownTokens.get(hash);
  if (refused !== undefined) throw new HttpError(401, refused);
  const limit = lookupBudget(presented.lookupsPerMinute);
  const waitMs = limit.take(client);
  if (waitMs > 0) {
    throw new HttpError(429, TOO_MANY_REQUESTS, { "retry-after": String(retryAfterSeconds(waitMs)) });
  }
  const found = await presented.find();
  const refusal = found === undefined ? UNAUTHORIZED : presented.refusalOf?.(found);
  if (refusal !== undefined) {
    unknownTokens.remember(hash, refusal);
    throw new HttpError(401, refusal);
  }
  limit.giveBack(client);
  return found!;
}
