// The limits decided in Postgres, seen through the balancer: the token limit of one client address
// holds whichever instance answers, and concurrent billed calls never overdraw a wallet.
import type { Haproxy, ServerStat } from "./haproxy.ts";
import { ledgerOf, newWallet } from "./wallet.ts";
import { sleep } from "../bench/system.ts";

/** How long POST /token is sent for: within the 10 s of one token per address. */
const TOKEN_WINDOW_MS = 9_500;
const TOKEN_BATCH = 3;
const TOKEN_PAUSE_MS = 250;
export const OVERDRAFT_CALLS = 150;

export interface Check<F> {
  ok: boolean;
  line: string;
  figures: F;
}

function perServer(before: ServerStat[], after: ServerStat[]): Record<string, number> {
  return Object.fromEntries(
    after.map((s) => [s.name, s.requests - (before.find((b) => b.name === s.name)?.requests ?? 0)]),
  );
}

/** POST /token from one address (the task's own, as HAProxy sees it) for 9.5 s: one 200, then 429s. */
export async function tokenLimit(haproxy: Haproxy) {
  const before = await haproxy.stats();
  const statuses: number[] = [];
  let withRetryAfter = 0;
  const started = performance.now();
  while (performance.now() - started < TOKEN_WINDOW_MS) {
    await Promise.all(Array.from({ length: TOKEN_BATCH }, async () => {
      const res = await fetch(`${haproxy.url}/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "token=new",
      });
      await res.body?.cancel();
      statuses.push(res.status);
      if (res.status === 429 && res.headers.has("retry-after")) withRetryAfter++;
    }));
    await sleep(TOKEN_PAUSE_MS);
  }
  const instances = perServer(before, await haproxy.stats());
  const figures = {
    requests: statuses.length,
    created: statuses.filter((s) => s === 200).length,
    limited: statuses.filter((s) => s === 429).length,
    limitedWithRetryAfter: withRetryAfter,
    seconds: Math.round((performance.now() - started) / 100) / 10,
    perInstance: instances,
  };
  const ok = figures.created === 1 && figures.limited === figures.requests - 1 &&
    withRetryAfter === figures.limited && Object.values(instances).every((n) => n > 0);
  const line = `token limit: ${figures.requests} POST /token from one address in ${figures.seconds} s, ` +
    `spread over the instances ${JSON.stringify(instances)}: ${figures.created} × 200, ` +
    `${figures.limited} × 429 (${withRetryAfter} with Retry-After)`;
  return { ok, line, figures } satisfies Check<typeof figures>;
}

/** 150 billed writes at once through the balancer on a wallet of 100 credits. */
export async function noOverdraft(haproxy: Haproxy, instanceUrl: string) {
  const token = await newWallet(instanceUrl);
  const before = await haproxy.stats();
  const statuses = await Promise.all(Array.from({ length: OVERDRAFT_CALLS }, async (_, i) => {
    const res = await fetch(`${haproxy.url}/kv/overdraft/key-${i}`, {
      method: "POST",
      headers: { "x-token": token },
      body: "x",
    });
    await res.body?.cancel();
    return res.status;
  }));
  const { balance, entries } = await ledgerOf(haproxy.url, token);
  const figures = {
    calls: OVERDRAFT_CALLS,
    served: statuses.filter((s) => s === 200).length,
    refused402: statuses.filter((s) => s === 402).length,
    other: statuses.filter((s) => s !== 200 && s !== 402).length,
    balanceAfter: balance,
    debits: entries.filter((e) => e.type === "debit").length,
    perInstance: perServer(before, await haproxy.stats()),
  };
  const ok = figures.served === 100 && figures.refused402 === 50 && figures.other === 0 &&
    balance === 0 && figures.debits === 100;
  const line = `no overdraft: ${OVERDRAFT_CALLS} concurrent billed writes on 100 credits, spread ` +
    `${JSON.stringify(figures.perInstance)}: ${figures.served} served, ${figures.refused402} × 402, ` +
    `${figures.other} other; balance after ${balance}, ${figures.debits} debits in the ledger`;
  return { ok, line, figures } satisfies Check<typeof figures>;
}
