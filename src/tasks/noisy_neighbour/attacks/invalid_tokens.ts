// Attack 6, an invalid-token flood: a random token on every call, from one client address, over
// several connections: no wallet pays for it, and each unknown token may cost a lookup.
import { api, randomText } from "../api.ts";
import { LOAD } from "../settings.ts";
import { type Attack, clientLoops, httpAnswer } from "./attack.ts";

/** The flood's client address (X-Forwarded-For): not the victim's, nor the attacker wallet's. */
const FLOOD_FROM = "203.0.113.66";

export const invalidTokens: Attack = (context) => {
  const loops = clientLoops(
    LOAD.invalidTokenConnections,
    async (_client, signal) =>
      httpAnswer(
        await api(context.url, {
          method: "GET",
          path: "/kv/b/k",
          token: randomText(32),
          from: FLOOD_FROM,
          signal,
        }),
      ),
  );
  return Promise.resolve({
    async stop() {
      await loops.stop();
      return {
        tally: loops.tally,
        notes: [`${LOAD.invalidTokenConnections} connections, a new random 32-character token on every call`],
      };
    },
  });
};
