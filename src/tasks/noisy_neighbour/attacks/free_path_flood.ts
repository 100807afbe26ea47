// Attack 2, free-path floods: calls that cost the attacker nothing or are refused, each with a
// query string of 15,000 random characters (as long as a request line may be, and incompressible):
// GET /recharge, 402s of a wallet at 0, 403s of a scoped key, and the free ledger view past its
// limit (429), over several connections.
import { api, createKey, randomText } from "../api.ts";
import { LOAD } from "../settings.ts";
import { type Attack, clientLoops, httpAnswer } from "./attack.ts";

/** Query padding: the issue measured paths of about 15 KB kept whole in the permanent log. */
export const FLOOD_PAD_CHARS = 15_000;
const PADS = 16;

export const freePathFlood: Attack = async (context) => {
  // A read-only key limited to bucket "only": every call on another bucket is its 403.
  const key = await createKey(context.url, context.attacker, {
    name: "flood",
    scope: "read",
    buckets: ["only"],
  });
  const pads = Array.from({ length: PADS }, () => randomText(FLOOD_PAD_CHARS));
  const { attacker, zero } = context;
  // Connections by kind: most on the free view of all, the rest on each refusal.
  const kinds = [
    { path: "/recharge?amount=1&pad=", token: attacker.token, from: attacker.from },
    { path: "/recharge?amount=1&pad=", token: attacker.token, from: attacker.from },
    { path: "/recharge?amount=1&pad=", token: attacker.token, from: attacker.from },
    { path: "/kv/flood/k?pad=", token: zero.token, from: zero.from },
    { path: "/kv/flood/k?pad=", token: zero.token, from: zero.from },
    { path: "/kv/flood/k?pad=", token: key.key, from: attacker.from },
    { path: "/kv/flood/k?pad=", token: key.key, from: attacker.from },
    { path: "/token/ledger?limit=1&pad=", token: attacker.token, from: attacker.from },
  ];
  let sent = 0;
  const loops = clientLoops(LOAD.floodConnections, async (client, signal) => {
    const kind = kinds[client % kinds.length];
    const pad = pads[sent++ % PADS];
    return httpAnswer(
      await api(context.url, {
        method: "GET",
        path: kind.path + pad,
        token: kind.token,
        from: kind.from,
        signal,
      }),
    );
  });
  return {
    async stop() {
      await loops.stop();
      return {
        tally: loops.tally,
        notes: [
          `connections: 3 GET /recharge, 2 GET /kv of a wallet at 0 (402), 2 GET /kv of a scoped key ` +
          `outside its bucket (403), 1 GET /token/ledger (429 past its limit); each query ${FLOOD_PAD_CHARS} ` +
          `random characters`,
        ],
      };
    },
  };
};
