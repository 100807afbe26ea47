// The permanent-log budget, measured: the most bytes of `events` one wallet adds per credit spent
// (the largest paid calls the service allows) and, for the free and refused calls, the bytes per
// call times what the code's rate limits allow a day. Runs against any service with TRUST_PROXY
// (its wallets come from their own client addresses); `deno task bench` can call it too.
import type { Sql } from "../../db/connect.ts";
import { VIEW_CALLS_PER_MINUTE } from "../../wallets/view_limit.ts";
import { FREE_CALLS_PER_DAY } from "../../../projections/wallets.ts";
import { MAX_HEADERS, MAX_OPTION_CHARS, MAX_OPTIONS, MAX_WEBHOOK_URL_LENGTH } from "../../webhooks/mod.ts";
import { api, createMailbox, json, newWallet, randomText, spendAll } from "./api.ts";
import { eventsMark, rowBytesSince, walletIdOf } from "./log_bytes.ts";
import { formatBytes } from "./report.ts";
import { startReceiver } from "./receiver.ts";
import { dataBytes, sendMessage } from "./smtp_client.ts";

/** The rate limits that bound free calls, per wallet. */
export type FreeGroup = "views" | "other";

/**
 * Free calls a wallet may make a day under each limit of the code; undefined: no limit found. The
 * free views have VIEW_CALLS_PER_MINUTE of their own, and every call that charges nothing, views
 * included, shares the wallet's allowance of free calls (FREE_CALLS_PER_DAY, issue 21).
 */
export const FREE_ALLOWANCES_PER_DAY: Record<FreeGroup, number | undefined> = {
  views: Math.min(VIEW_CALLS_PER_MINUTE * 24 * 60, FREE_CALLS_PER_DAY),
  other: FREE_CALLS_PER_DAY,
};

/** The allowance every group shares: no more free calls a day than this, whatever their group. */
export const SHARED_FREE_CALLS_PER_DAY: number | null = FREE_CALLS_PER_DAY;

export const FREE_GROUP_NAMES: Record<FreeGroup, string> = {
  views: "free views (GET /token/ledger, /token/usage; VIEW_CALLS_PER_MINUTE)",
  other: "other free and refused calls (GET /recharge, 402, 429, MCP wallet_balance)",
};

export interface BudgetProbe {
  name: string;
  status: number | string;
  /** Credits the call was charged. */
  credits: number;
  /** Bytes of the wallet's `events` rows the call added (sum of pg_column_size). */
  bytes: number;
}

export interface FreeProbe extends BudgetProbe {
  group: FreeGroup;
}

export interface LogBudget {
  /** The longest query string the service took (the probes' padding). */
  queryChars: number;
  paid: BudgetProbe[];
  /** The most bytes per credit among the paid probes, and which one. */
  maxBytesPerCredit: number;
  worstPaid: string;
  free: FreeProbe[];
  groups: {
    group: FreeGroup;
    allowancePerDay: number | null;
    maxBytesPerCall: number;
    bytesPerDay: number | null;
  }[];
  /** Bytes a day of free calls, every limit at its allowance; null: a free call with bytes has no limit. */
  freeBytesPerDay: number | null;
}

/** The budget's arithmetic, pure: the worst paid probe, and each free limit's bytes a day. */
export function budgetFigures(
  paid: BudgetProbe[],
  free: FreeProbe[],
  { allowances = FREE_ALLOWANCES_PER_DAY, sharedPerDay = SHARED_FREE_CALLS_PER_DAY }: {
    allowances?: Record<FreeGroup, number | undefined>;
    sharedPerDay?: number | null;
  } = {},
): Pick<LogBudget, "maxBytesPerCredit" | "worstPaid" | "groups" | "freeBytesPerDay"> {
  let maxBytesPerCredit = 0;
  let worstPaid = "none";
  for (const probe of paid) {
    if (probe.credits <= 0) continue;
    const perCredit = Math.round(probe.bytes / probe.credits);
    if (perCredit > maxBytesPerCredit) [maxBytesPerCredit, worstPaid] = [perCredit, probe.name];
  }
  const groups = (Object.keys(allowances) as FreeGroup[]).map((group) => {
    const maxBytesPerCall = Math.max(0, ...free.filter((p) => p.group === group).map((p) => p.bytes));
    const allowance = allowances[group];
    return {
      group,
      allowancePerDay: allowance ?? null,
      maxBytesPerCall,
      bytesPerDay: allowance === undefined ? (maxBytesPerCall === 0 ? 0 : null) : maxBytesPerCall * allowance,
    };
  });
  const separate = groups.some((g) => g.bytesPerDay === null)
    ? null
    : groups.reduce((sum, g) => sum + g.bytesPerDay!, 0);
  // A shared allowance bounds them all together: at most that many calls, each at most the largest.
  const shared = sharedPerDay === null
    ? null
    : sharedPerDay * Math.max(0, ...groups.map((g) => g.maxBytesPerCall));
  const freeBytesPerDay = separate === null
    ? shared
    : shared === null
    ? separate
    : Math.min(separate, shared);
  return { maxBytesPerCredit, worstPaid, groups, freeBytesPerDay };
}

export function budgetLines(budget: LogBudget): string[] {
  const probe = (p: BudgetProbe) =>
    `${p.name} (${p.status}): ${formatBytes(p.bytes)}` +
    (p.credits > 0 ? ` for ${p.credits} credit${p.credits === 1 ? "" : "s"}` : " free");
  const lines = [
    `permanent-log budget (rows of the wallet's events, sum of pg_column_size; queries of ${budget.queryChars} ` +
    `random characters):`,
    `  per credit spent: at most ${formatBytes(budget.maxBytesPerCredit)} (${budget.worstPaid}); ` +
    budget.paid.map(probe).join("; "),
    `  free and refused calls: ${budget.free.map(probe).join("; ")}`,
  ];
  for (const g of budget.groups) {
    lines.push(
      `  ${FREE_GROUP_NAMES[g.group]}: ${formatBytes(g.maxBytesPerCall)} a call, ` +
        (g.allowancePerDay === null
          ? `no limit in the code: ${g.bytesPerDay === 0 ? "nothing written" : "unbounded"}`
          : `${g.allowancePerDay.toLocaleString("en-US")} calls a day: ${formatBytes(g.bytesPerDay!)} a day`),
    );
  }
  lines.push(
    `  free per wallet and day: ${
      budget.freeBytesPerDay === null
        ? "unbounded (a free path with no limit)"
        : formatBytes(budget.freeBytesPerDay)
    }`,
  );
  return lines;
}

export interface BudgetOptions {
  url: string;
  /** The service's database, to read the rows each probe added. */
  sql: Sql;
  /** The SMTP port, for the email probe (skipped without it or without private webhooks). */
  smtpPort?: number;
  /** The service allows http://127.0.0.1 webhooks (UNSAFE_ALLOW_PRIVATE_WEBHOOKS). */
  allowPrivateWebhooks?: boolean;
  /** Distinct client addresses for the probe's wallets (X-Forwarded-For); default 10.250.x.y. */
  clientAddress?: (n: number) => string;
}

/** Longest query strings tried, longest first: a request line must fit the server's header limit. */
const QUERY_LENGTHS = [16_000, 15_000, 12_000, 8_000, 4_000, 2_000, 1_000];
const ATTACHMENTS = 100;
/** Mirrors of input.ts's unexported bounds of header names and values. */
const HEADER_NAME_CHARS = 256;
const HEADER_VALUE_CHARS = 4096;
const TEMPLATE_BYTES = 2000;

function defaultAddress(n: number): string {
  return `10.250.${(Deno.pid + n) % 250}.${(n % 250) + 1}`;
}

export async function measureLogBudget(options: BudgetOptions): Promise<LogBudget> {
  const { url, sql } = options;
  const address = options.clientAddress ?? defaultAddress;
  const payer = { token: await newWallet(url, address(1)), from: address(1) };
  const payerId = walletIdOf(payer.token);

  /** One call of the payer's (or another wallet's), and the bytes its wallet's rows grew by. */
  async function measure(
    name: string,
    call: () => Promise<{ status: number | string; cost: number | null }>,
    walletId = payerId,
    settle?: () => Promise<void>,
  ): Promise<BudgetProbe> {
    const mark = await eventsMark(sql);
    const answer = await call();
    await settle?.();
    return {
      name,
      status: answer.status,
      credits: answer.cost ?? 0,
      bytes: await rowBytesSince(sql, mark, [walletId]),
    };
  }

  // The longest query the service takes: every free or refused call below carries one.
  let queryChars = 0;
  for (const length of QUERY_LENGTHS) {
    const answer = await api(url, {
      method: "GET",
      path: `/recharge?amount=1&pad=${randomText(length)}`,
      ...payer,
    });
    if (answer.status !== 414 && answer.status !== 431) {
      queryChars = length;
      break;
    }
  }
  const pad = () => `pad=${randomText(queryChars)}`;
  const get = (path: string, who: { token: string; from: string }) => () =>
    api(url, { method: "GET", path, ...who });

  const paid: BudgetProbe[] = [];
  paid.push(
    await measure(
      "KV write of 1000 four-byte characters",
      () =>
        api(url, {
          method: "POST",
          path: `/kv/${randomText(30)}/${randomText(30)}?ttl=2592000`,
          ...payer,
          body: Array.from(
            { length: 1000 },
            () => String.fromCodePoint(0x20000 + Math.floor(Math.random() * 0xa6d0)),
          )
            .join(""),
        }),
    ),
  );
  paid.push(await measure("GET /kv with the longest query (404)", get(`/kv/b/missing?${pad()}`, payer)));
  paid.push(
    await measure(
      "webhook create at every bound",
      () => api(url, { method: "POST", path: "/webhook", ...payer, ...json(largestWebhook()) }),
    ),
  );
  const email = await emailProbe(options, payer, measure);
  if (email) paid.push(email);

  const zero = { token: await newWallet(url, address(2)), from: address(2) };
  await spendAll(url, zero);
  const free: FreeProbe[] = [];
  const freeProbe = async (group: FreeGroup, probe: Promise<BudgetProbe>) =>
    free.push({ ...(await probe), group });
  await freeProbe(
    "other",
    measure("GET /recharge with the longest query", get(`/recharge?amount=1&${pad()}`, payer)),
  );
  await freeProbe(
    "other",
    measure("402 of a wallet at 0, longest query", get(`/kv/b/k?${pad()}`, zero), walletIdOf(zero.token)),
  );
  await freeProbe(
    "views",
    measure("GET /token/ledger with the longest query", get(`/token/ledger?limit=1&${pad()}`, payer)),
  );
  // Past the views' limit: a 429, free.
  for (let i = 1; i < VIEW_CALLS_PER_MINUTE; i++) {
    await api(url, { method: "GET", path: "/token/ledger?limit=1", ...payer });
  }
  await freeProbe(
    "other",
    measure("429 past the views' limit, longest query", get(`/token/ledger?limit=1&${pad()}`, payer)),
  );
  await freeProbe("other", measure("MCP wallet_balance", () => mcpWalletBalance(url, payer)));
  return { queryChars, paid, free, ...budgetFigures(paid, free) };
}

/** A webhook at every bound the create allows: headers, options, template and URL. */
function largestWebhook() {
  const headers = Object.fromEntries(
    Array.from(
      { length: MAX_HEADERS },
      () => [randomText(HEADER_NAME_CHARS), randomText(HEADER_VALUE_CHARS)],
    ),
  );
  const options = Object.fromEntries(
    Array.from({ length: MAX_OPTIONS }, () => [randomText(64), randomText(MAX_OPTION_CHARS)]),
  );
  const template = { text: randomText(TEMPLATE_BYTES - 20) };
  const base = "https://hooks.example.com/";
  return {
    webhookId: randomText(30),
    url: base + randomText(MAX_WEBHOOK_URL_LENGTH - base.length),
    headers,
    format: "custom",
    template,
    options,
  };
}

/** An email with many attachments of long names, its delivery included (5 credits). */
async function emailProbe(
  options: BudgetOptions,
  payer: { token: string; from: string },
  measure: (
    name: string,
    call: () => Promise<{ status: number | string; cost: number | null }>,
    walletId?: string,
    settle?: () => Promise<void>,
  ) => Promise<BudgetProbe>,
): Promise<BudgetProbe | undefined> {
  if (!options.smtpPort || !options.allowPrivateWebhooks) return undefined;
  const receiver = startReceiver("ok");
  try {
    const mailbox = await createMailbox(options.url, payer, {
      webhookId: "budget",
      target: `${receiver.url}/budget`,
    });
    const boundary = `b${randomText(20)}`;
    const parts = Array.from({ length: ATTACHMENTS }, () =>
      [
        `--${boundary}`,
        `Content-Type: application/octet-stream`,
        `Content-Disposition: attachment; filename="${randomText(200)}.bin"`,
        "Content-Transfer-Encoding: base64",
        "",
        btoa(randomText(48)),
      ].join("\r\n"));
    const message = [
      `From: "${randomText(200)}" <sender@budget.example>`,
      `To: ${mailbox}`,
      `Subject: ${randomText(900)}`,
      `Message-ID: <${randomText(200)}@budget.example>`,
      "MIME-Version: 1.0",
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      "",
      `--${boundary}`,
      "Content-Type: text/plain",
      "",
      randomText(500),
      ...parts,
      `--${boundary}--`,
      "",
    ].join("\r\n");
    return await measure(
      `email with ${ATTACHMENTS} attachments of long names, delivered once`,
      async () => {
        // SMTP tells no cost: the wallet's balance does.
        const before = await balanceOf(options.sql, payer.token);
        const result = await sendMessage(
          { port: options.smtpPort!, localAddress: "127.0.0.1" },
          { envelope: { from: "sender@budget.example", to: mailbox }, data: dataBytes(message) },
        );
        return { status: `smtp ${result.code}`, cost: before - await balanceOf(options.sql, payer.token) };
      },
      undefined,
      async () => {
        const deadline = performance.now() + 10_000;
        while (receiver.received === 0 && performance.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        // The attempt's own event is committed just after the answer.
        await new Promise((resolve) => setTimeout(resolve, 500));
      },
    );
  } finally {
    await receiver.close();
  }
}

/** The balance as the wallets projection holds it: read without a call, so nothing is logged. */
async function balanceOf(sql: Sql, token: string): Promise<number> {
  const [row] = await sql<{ balance: number }[]>`select balance from wallets where wallet_id = ${
    walletIdOf(token)
  }`;
  return Number(row?.balance ?? 0);
}

async function mcpWalletBalance(url: string, wallet: { token: string; from: string }) {
  const answer = await api(url, {
    method: "POST",
    path: "/mcp",
    ...wallet,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "wallet_balance", arguments: {} },
    }),
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
  });
  return { status: answer.status, cost: 0 };
}
