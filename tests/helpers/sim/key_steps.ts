// The simulation's scoped-key steps: a wallet makes a key with random rules (scope, a bucket, a
// spend cap, an expiry an hour ahead), revokes one, or uses one for any key-value call of the
// simulation; the service and the model must agree on every answer, and at the end on every key's
// spend.
import type { Billed, ModelKey, ModelWallet } from "./model.ts";
import type { Simulation } from "./driver.ts";
import { type Answer, randomKvOp } from "./kv_ops.ts";
import { compareBilled } from "./kv_steps.ts";

const BUCKETS = ["b", "d"];
const HOUR = 3600_000;

interface Expiring extends ModelKey {
  expiresAt?: number;
}

/** The model's answer to a call with the key at `now`: an expired key is refused like a revoked one. */
function modelOf(
  w: ModelWallet,
  key: Expiring,
  now: number,
  need: "read" | "write",
  bucket: string,
  call: () => Billed,
) {
  if (key.expiresAt !== undefined && now >= key.expiresAt && !w.deactivated) return { status: 401 };
  return w.keyCall(key, need, bucket, call);
}

export function keyStep(sim: Simulation): (w: ModelWallet) => Promise<string> {
  const rng = sim.rng;
  const roll = rng.next();
  const scope = rng.pick(["read", "write"] as const);
  const buckets = rng.chance(0.5) ? [rng.pick(BUCKETS)] : undefined;
  const cap = rng.chance(0.5) ? 1 + rng.int(4) : undefined;
  const expiring = rng.chance(0.3);
  const which = rng.int(8);
  return async (w) => {
    const now = sim.now();
    if (w.keys.length === 0 || roll < 0.25) {
      const rules = {
        name: "sim",
        scope,
        ...(buckets ? { buckets } : {}),
        ...(cap ? { spendCap: cap } : {}),
        ...(expiring ? { expiresAt: new Date(now + HOUR).toISOString() } : {}),
      };
      const body = JSON.stringify(rules);
      const res = await sim.expectBilled(
        "POST /token/keys",
        sim.svc.request("POST", "/token/keys", { token: w.token, body }),
        w.bill(1, () => ({ status: 200 })),
      );
      if (res.status === 200) {
        const made = JSON.parse(res.text);
        const key: Expiring = { id: made.id, token: made.key, scope, buckets, cap, spent: 0, revoked: false };
        if (expiring) key.expiresAt = now + HOUR;
        w.keys.push(key);
      }
      return `POST /token/keys ${scope}${buckets ? ` ${buckets}` : ""}${cap ? ` cap ${cap}` : ""}`;
    }
    const key = w.keys[which % w.keys.length] as Expiring;
    if (roll < 0.35) {
      const model = w.bill(1, () => {
        key.revoked = true;
        return { status: 200, body: "OK" };
      });
      await sim.expectBilled(
        `DELETE ${key.id}`,
        sim.svc.request("DELETE", `/token/keys/${key.id}`, { token: w.token }),
        model,
      );
      return `DELETE /token/keys/${key.id}`;
    }
    // Any KV call of the simulation (read, conditional write, delete, incr, listing), in bucket "b".
    const op = randomKvOp(rng, w, true);
    const need = op.method === "GET" ? "read" : "write";
    let check: ((res: Answer) => void) | undefined;
    const model = modelOf(w, key, now, need, "b", () => {
      const ran = op.model(w, now);
      check = ran.check;
      return ran.billed;
    });
    const res = await sim.svc.request(op.method, op.path, {
      token: key.token,
      headers: op.headers,
      body: op.body,
    });
    compareBilled(`${op.what} by ${key.id}`, res, model);
    check?.(res);
    return `${op.what} by key ${key.id}`;
  };
}
