// Attack 5, idle SMTP sessions: from two addresses (127.0.0.3 and 127.0.0.4), as many sessions
// as the server lets them hold, each greeted with EHLO and then silent; a session the server
// closes is opened again, as a persistent attacker would.
import { LOAD } from "../settings.ts";
import { openSession, type SmtpSession } from "../smtp_client.ts";
import { countAnswer, newTally } from "../tally.ts";
import { type Attack, sleep } from "./attack.ts";

const ADDRESSES = ["127.0.0.3", "127.0.0.4"];
/** Sessions opened at once while filling, and how often closed ones are replaced. */
const OPENING_BATCH = 8;
const REFILL_EVERY_MS = 250;

export const idleSmtp: Attack = async (context) => {
  const tally = newTally();
  const held = new Map<string, SmtpSession[]>(ADDRESSES.map((a) => [a, []]));
  const most = new Map<string, number>(ADDRESSES.map((a) => [a, 0]));
  let refusal = "";
  let reopened = 0;
  let closedByServer = 0;
  let filling = true;

  /** Opens sessions from `address` until one is refused or it holds the most the attack tries. */
  async function fill(address: string): Promise<number> {
    let opened = 0;
    while (true) {
      const before = held.get(address)!;
      const sessions = before.filter((s) => !s.closed);
      if (filling) closedByServer += before.length - sessions.length;
      held.set(address, sessions);
      const room = LOAD.idleSessionsPerAddress - sessions.length;
      if (room <= 0) return opened;
      const batch = await Promise.all(
        Array.from(
          { length: Math.min(OPENING_BATCH, room) },
          () => openSession({ port: context.smtpPort, localAddress: address }),
        ),
      );
      let refused = false;
      for (const result of batch) {
        if ("code" in result) {
          countAnswer(tally, {
            status: result.code ? `smtp ${result.code}` : "network",
            cost: null,
            retryAfter: false,
          });
          refusal ||= result.reply;
          refused = true;
        } else {
          countAnswer(tally, { status: "smtp 250 (held)", cost: null, retryAfter: false });
          sessions.push(result);
          opened++;
        }
      }
      most.set(address, Math.max(most.get(address)!, sessions.filter((s) => !s.closed).length));
      if (refused) return opened;
    }
  }

  for (const address of ADDRESSES) await fill(address);
  // Keep the pressure: what the server closes is opened again.
  const refilling = (async () => {
    while (filling) {
      await sleep(REFILL_EVERY_MS);
      for (const address of ADDRESSES) {
        if (!filling) break;
        if (held.get(address)!.some((s) => s.closed)) reopened += await fill(address);
      }
    }
  })();

  return {
    async stop() {
      filling = false;
      await refilling;
      closedByServer += [...held.values()].flat().filter((s) => s.closed).length;
      const open = [...held.values()].flat().filter((s) => !s.closed).length;
      for (const session of [...held.values()].flat()) session.close();
      return {
        tally,
        notes: [
          `most sessions held: ${ADDRESSES.map((a) => `${a} ${most.get(a)}`).join(", ")}; first refusal: ` +
          `${
            refusal.slice(0, 120) || "none"
          }; ${open} still open at the end, ${closedByServer} closed by the ` +
          `server, ${reopened} opened again`,
        ],
      };
    },
  };
};
