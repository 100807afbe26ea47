// Attack 7, idempotency abuse with a capped key: a read-only key with `spendCap: 2` on bucket
// `only` uses one Idempotency-Key once, then reuses it with other bodies on other buckets and on
// /webhook, from several clients at once. Its spend, read back through GET /token/keys, must stay
// within its cap.
import { api, createKey, json, keySpent } from "../api.ts";
import { LOAD } from "../settings.ts";
import { type Attack, clientLoops, httpAnswer } from "./attack.ts";

export const KEY_CAP = 2;
const IDEMPOTENCY_KEY = "noisy-reused-key";

export const cappedKeyIdempotency: Attack = async (context) => {
  const { url, attacker } = context;
  const key = await createKey(url, attacker, {
    name: "capped",
    scope: "read",
    buckets: ["only"],
    spendCap: KEY_CAP,
  });
  const headers = { "idempotency-key": IDEMPOTENCY_KEY };
  // The first use of the Idempotency-Key: a write the read-only key may not make (403).
  const first = await api(url, {
    method: "POST",
    path: "/kv/only/x",
    token: key.key,
    from: attacker.from,
    body: "first",
    headers,
  });
  let charged = first.cost ?? 0;
  let n = 0;
  const loops = clientLoops(LOAD.idempotencyClients, async (_client, signal) => {
    const i = n++;
    const answer = i % 2 === 0
      ? await api(url, {
        method: "POST",
        path: `/kv/other${i % 50}/k`,
        token: key.key,
        from: attacker.from,
        body: `v${i}`,
        headers,
        signal,
      })
      : await api(url, {
        method: "POST",
        path: "/webhook",
        token: key.key,
        from: attacker.from,
        body: json({ webhookId: `w${i % 50}`, url: "http://127.0.0.1:9/hook" }).body,
        headers: { ...headers, "content-type": "application/json" },
        signal,
      });
    charged += answer.cost ?? 0;
    return httpAnswer(answer);
  });
  return {
    async stop() {
      await loops.stop();
      const spent = await keySpent(url, attacker, key.id);
      return {
        tally: loops.tally,
        key: { spent, cap: KEY_CAP },
        notes: [
          `first use of the Idempotency-Key: ${first.status}; then ${LOAD.idempotencyClients} clients reused it on ` +
          `other buckets and POST /webhook; X-Cost summed over the key's answers: ${charged}`,
        ],
      };
    },
  };
};
