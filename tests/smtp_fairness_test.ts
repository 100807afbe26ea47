// SMTP sessions leave room for others (issue 21): addresses that hold sessions idle cannot lock out a
// new sender, and under pressure an idle session loses its place after a short idle time, while
// without pressure RFC 5321's idle time holds. Clients connect from several loopback addresses
// (127.0.0.x), with small limits so the test is fast. Then the same decisions, pure.
import assert from "node:assert/strict";
import { newToken, walletClient } from "./helpers/client.ts";
import { startService } from "./helpers/service.ts";
import { startReceiver } from "./helpers/receiver.ts";
import { sendMail } from "./helpers/smtp.ts";
import { openSmtpSessionFrom, type SmtpSessionFrom } from "./helpers/smtp_session.ts";
import {
  type CrowdPolicy,
  idleUnderPressure,
  type OpenSession,
  sessionToReplace,
} from "../src/email/smtp_pressure.ts";
import { smtpAdmission } from "../src/email/smtp_admission.ts";
import { senderAddress } from "../src/email/sender_address.ts";
import { parseConfig } from "../src/config.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sessions from `address`, each greeted and past EHLO, then left idle. */
async function holdIdle(port: number, address: string, count: number): Promise<SmtpSessionFrom[]> {
  const sessions: SmtpSessionFrom[] = [];
  for (let i = 0; i < count; i++) {
    const session = await openSmtpSessionFrom({ smtpPort: port }, address);
    assert.match(session.greeting, /^220 /, `${address} #${i}: ${session.greeting}`);
    assert.match(await session.send("EHLO holder.example"), /^250/);
    sessions.push(session);
  }
  return sessions;
}

/** Whether `session` is closed within `ms` (false when it is still open then). */
async function closedWithin(session: SmtpSessionFrom, ms: number): Promise<boolean> {
  return await Promise.race([session.closed.then(() => true), sleep(ms).then(() => false)]);
}

Deno.test("a new sender gets in while two addresses hold every session idle", async () => {
  const svc = await startService({
    smtp: true,
    env: {
      UNSAFE_ALLOW_PRIVATE_WEBHOOKS: "1",
      SMTP_MAX_CONNECTIONS: "8",
      SMTP_MAX_CONNECTIONS_PER_IP: "4",
      // Pressure closes nobody during this test: the newcomer alone must make room.
      SMTP_PRESSURE_IDLE_MS: "120000",
    },
  });
  const receiver = startReceiver();
  const held: SmtpSessionFrom[] = [];
  try {
    const client = walletClient(svc, await newToken(svc));
    const created = await client.postJson("/webhook", { url: `${receiver.url}/in`, webhookId: "in" });
    const address = created.json().email;

    held.push(...await holdIdle(svc.smtpPort, "127.0.0.2", 4));
    // A fifth session of one address is over its share, whoever is idle.
    const fifth = await openSmtpSessionFrom({ smtpPort: svc.smtpPort }, "127.0.0.2");
    assert.match(fifth.greeting, /^421 4\.7\.0 Too many connections from your address/);
    held.push(...await holdIdle(svc.smtpPort, "127.0.0.3", 4));
    // Long enough idle for a newcomer to take the place of one of them.
    await sleep(2500);

    const sent = await sendMail(svc, { to: address, subject: "Room for me", text: "Hi" }, {
      localAddress: "127.0.0.4",
    });
    assert.equal(sent.code, 250, sent.response);
    const [delivery] = await receiver.waitFor(1);
    assert.equal(JSON.parse(delivery.body).subject, "Room for me");
    // Exactly one holder gave way, told why; the others are still open.
    const gone = held.filter((session) => session.isClosed());
    assert.equal(gone.length, 1);
    assert.match(gone[0].received(), /\r\n421 4\.4\.2 Idle while the server is busy, closing\r\n$/);
  } finally {
    held.forEach((session) => session.close());
    await receiver.close();
    await svc.dispose();
  }
});

Deno.test("under pressure an idle session is closed after the short idle time; without pressure it stays", async () => {
  const svc = await startService({
    smtp: true,
    env: {
      SMTP_MAX_CONNECTIONS: "8",
      SMTP_MAX_CONNECTIONS_PER_IP: "4",
      SMTP_PRESSURE_CONNECTIONS: "6",
      SMTP_PRESSURE_IDLE_MS: "1500",
    },
  });
  const held: SmtpSessionFrom[] = [];
  let nooping: ReturnType<typeof setInterval> | undefined;
  try {
    held.push(...await holdIdle(svc.smtpPort, "127.0.0.2", 4));
    // One holder keeps its socket busy with NOOP: that is no progress in a mail transaction.
    const [noop] = await holdIdle(svc.smtpPort, "127.0.0.3", 1);
    held.push(noop);
    nooping = setInterval(() => noop.isClosed() || noop.send("NOOP").catch(() => {}), 300);
    // Five sessions are no pressure: idle ones are kept well past the short idle time.
    for (const session of held) {
      assert.equal(await closedWithin(session, 500), false, "closed without pressure");
    }
    await sleep(2000);
    assert.ok(held.every((session) => !session.isClosed()), "closed without pressure");

    // The sixth makes pressure: the sessions idle 1.5 s are closed, and then the pressure is gone.
    const [sixth] = await holdIdle(svc.smtpPort, "127.0.0.4", 1);
    for (const session of held) {
      assert.equal(await closedWithin(session, 8000), true, "an idle session kept under pressure");
      assert.match(session.received(), /\r\n421 4\.4\.2 Idle while the server is busy, closing\r\n$/);
    }
    held.push(sixth);
    assert.equal(await closedWithin(sixth, 3000), false, "closed once the pressure was gone");
  } finally {
    clearInterval(nooping);
    held.forEach((session) => session.close());
    await svc.dispose();
  }
});

const POLICY: CrowdPolicy = {
  maxConnections: 4,
  maxConnectionsPerIp: 3,
  pressureConnections: 3,
  pressureIdleMs: 10_000,
  idleTimeoutMs: 300_000,
  replaceableAfterMs: 2_000,
};

const session = (id: string, address: string, idleMs: number, busy = false): OpenSession => ({
  id,
  address,
  idleMs,
  busy,
});

Deno.test("a newcomer replaces an idle session of the address holding the most, the longest idle first", () => {
  const open = [
    session("a1", "A", 60_000),
    session("b1", "B", 5_000),
    session("b2", "B", 9_000),
    session("c1", "C", 1_000),
  ];
  assert.equal(sessionToReplace(open, POLICY), "b2");
  // Busy sessions (owed an answer) and sessions idle under 2 s never give way.
  assert.equal(
    sessionToReplace([session("b1", "B", 5_000, true), session("b2", "B", 1_999)], POLICY),
    undefined,
  );
  assert.equal(sessionToReplace([session("b1", "B", 5_000, true), session("a1", "A", 2_000)], POLICY), "a1");
});

Deno.test("under pressure sessions idle past the short idle time are closed; without pressure none", () => {
  const idle = [session("a1", "A", 11_000), session("a2", "A", 12_000), session("b1", "B", 30_000)];
  assert.deepEqual(idleUnderPressure(idle.slice(0, 2), POLICY), []);
  assert.deepEqual(idleUnderPressure(idle, POLICY), ["a2", "a1", "b1"]);
  assert.deepEqual(idleUnderPressure([...idle, session("c1", "C", 9_000)], POLICY), ["a2", "a1", "b1"]);
  assert.deepEqual(idleUnderPressure([...idle.slice(0, 2), session("b1", "B", 30_000, true)], POLICY), [
    "a2",
    "a1",
  ]);
  // An idle timeout shorter than the pressure's leaves the closing to it.
  assert.deepEqual(idleUnderPressure(idle, { ...POLICY, idleTimeoutMs: 5_000 }), []);
});

Deno.test("the admission makes room by closing one idle session, and keeps each address to its share", () => {
  let now = 0;
  const told: string[] = [];
  const admission = smtpAdmission({
    policy: POLICY,
    connectionOf: (id) => ({
      id,
      send: (code, message) => told.push(`${id} ${code} ${message}`),
      close() {},
    }),
    now: () => now,
  });
  const admit = (id: string, remoteAddress: string) => admission.admit({ id, remoteAddress });
  assert.equal(admit("a1", "10.0.0.1"), undefined);
  assert.equal(admit("a2", "10.0.0.1"), undefined);
  assert.equal(admit("b1", "::ffff:10.0.0.2"), undefined);
  now = 1_000;
  assert.equal(admit("a3", "10.0.0.1"), undefined);
  assert.equal(admit("a4", "10.0.0.1")?.code, 421, "over the address's share");
  // Full, and nobody idle for 2 s yet.
  assert.match(admit("c1", "10.0.0.3")?.message ?? "", /Too many connected clients/);
  now = 3_500;
  admission.progressed("a1");
  // a2 is the longest idle of the address holding the most.
  assert.equal(admit("c1", "10.0.0.3"), undefined);
  assert.deepEqual(told, ["a2 421 4.4.2 Idle while the server is busy, closing"]);
  assert.equal(admission.open, 4);
  // The closed session's own close later changes nothing.
  admission.closed({ id: "a2" });
  assert.equal(admission.open, 4);
  // The newcomer's own place counts for its address at once.
  admission.closed({ id: "c1" });
  assert.equal(admission.open, 3);
});

Deno.test("a client is its IPv4 address, or the /64 of its IPv6 address", () => {
  assert.equal(senderAddress("::ffff:10.0.0.2"), "10.0.0.2");
  assert.equal(senderAddress("10.0.0.2"), "10.0.0.2");
  assert.equal(senderAddress("2001:db8:1:2::10"), "2001:db8:1:2::/64");
  assert.equal(senderAddress("2001:0db8:0001:0002:ffff::1"), "2001:db8:1:2::/64");
  assert.notEqual(senderAddress("2001:db8:1:3::10"), senderAddress("2001:db8:1:2::10"));
  assert.equal(senderAddress(undefined), "unknown");
});

Deno.test("SMTP defaults: 16 sessions per address, pressure from three quarters of the sessions, 10 s idle then", () => {
  const config = parseConfig({});
  assert.ok(!("error" in config));
  assert.equal(config.smtpLimits.maxConnectionsPerIp, 16);
  assert.equal(config.smtpLimits.pressureConnections, 48);
  assert.equal(config.smtpLimits.pressureIdleMs, 10_000);
  const small = parseConfig({ SMTP_MAX_CONNECTIONS: "10" });
  assert.ok(!("error" in small) && small.smtpLimits.pressureConnections === 8);
  const wrong = parseConfig({ SMTP_MAX_CONNECTIONS: "10", SMTP_PRESSURE_CONNECTIONS: "11" });
  assert.ok("error" in wrong);
  assert.match(wrong.error, /^Invalid SMTP_PRESSURE_CONNECTIONS: must be at most SMTP_MAX_CONNECTIONS/m);
});
