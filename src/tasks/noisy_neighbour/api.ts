// The service's HTTP API as the task's clients use it: one call with its billing headers, and the
// few set-up calls (a wallet, a mailbox, a scoped key, a balance). Every client names its own
// address in X-Forwarded-For (the service runs with TRUST_PROXY), so each counts as itself.

/** Who calls: a token or scoped key, and the client address the service is told. */
export interface Caller {
  token: string;
  from: string;
}

export interface ApiAnswer {
  status: number;
  text: string;
  /** X-Cost, X-Balance; null when absent. */
  cost: number | null;
  balance: number | null;
  retryAfter: boolean;
}

export interface CallOptions {
  token?: string;
  body?: string;
  headers?: Record<string, string>;
  /** The client address the service is told (X-Forwarded-For). */
  from?: string;
  signal?: AbortSignal;
}

export async function api(
  url: string,
  options: CallOptions & { method: string; path: string },
): Promise<ApiAnswer> {
  const { method, path } = options;
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers["x-token"] = options.token;
  if (options.from !== undefined) headers["x-forwarded-for"] = options.from;
  const res = await fetch(url + path, { method, headers, body: options.body, signal: options.signal });
  const text = await res.text();
  const num = (name: string) => (res.headers.has(name) ? Number(res.headers.get(name)) : null);
  return {
    status: res.status,
    text,
    cost: num("x-cost"),
    balance: num("x-balance"),
    retryAfter: res.headers.has("retry-after"),
  };
}

export const json = (value: unknown) => ({
  body: JSON.stringify(value),
  headers: { "content-type": "application/json" },
});

function expect(answer: ApiAnswer, what: string, status = 200): ApiAnswer {
  if (answer.status !== status) {
    throw new Error(`${what} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
  }
  return answer;
}

/** A new wallet with its 100 free credits, asked from `from`. */
export async function newWallet(url: string, from: string): Promise<string> {
  const answer = await api(url, {
    method: "POST",
    path: "/token",
    from,
    body: "token=new",
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  return expect(answer, "POST /token").text;
}

/**
 * The wallet's balance read through GET /token, and that read's own cost, so that a difference of
 * two reads can leave the second read out.
 */
export async function readBalance(url: string, wallet: Caller): Promise<{ balance: number; cost: number }> {
  const answer = expect(await api(url, { method: "GET", path: "/token", ...wallet }), "GET /token");
  return { balance: Number(JSON.parse(answer.text).wallet), cost: answer.cost ?? 0 };
}

/** A mailbox webhook delivering to `target`; its mail address. */
export async function createMailbox(
  url: string,
  wallet: Caller,
  mailbox: { webhookId: string; target: string },
): Promise<string> {
  const answer = await api(url, {
    method: "POST",
    path: "/webhook",
    ...wallet,
    ...json({ webhookId: mailbox.webhookId, url: mailbox.target }),
  });
  return JSON.parse(expect(answer, `POST /webhook (${mailbox.webhookId})`).text).email;
}

/** A scoped key of the wallet; its secret and id. */
export async function createKey(
  url: string,
  wallet: Caller,
  rules: Record<string, unknown>,
): Promise<{ key: string; id: string }> {
  const answer = await api(url, { method: "POST", path: "/token/keys", ...wallet, ...json(rules) });
  const made = JSON.parse(expect(answer, "POST /token/keys").text);
  return { key: made.key, id: made.id };
}

/** A scoped key's spend as GET /token/keys shows it (the wallet token pays the read). */
export async function keySpent(url: string, wallet: Caller, id: string): Promise<number> {
  const answer = expect(await api(url, { method: "GET", path: "/token/keys", ...wallet }), "GET /token/keys");
  const key = (JSON.parse(answer.text).keys as { id: string; spent: number }[]).find((k) => k.id === id);
  if (!key) throw new Error(`GET /token/keys does not list key "${id}"`);
  return key.spent;
}

/** Spends a new wallet's 100 credits on cheap calls (404s), so that its next call gets 402. */
export async function spendAll(url: string, wallet: Caller): Promise<void> {
  let balance = 100;
  while (balance > 0) {
    const answers = await Promise.all(
      Array.from(
        { length: Math.min(10, balance) },
        () => api(url, { method: "GET", path: "/kv/drain/k", ...wallet }),
      ),
    );
    balance = Math.min(...answers.map((a) => a.balance ?? 0));
  }
}

/** Random lowercase letters and digits, as incompressible as a URL allows. */
export function randomText(length: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let text = "";
  for (const byte of bytes) text += alphabet[byte % alphabet.length];
  return text;
}
