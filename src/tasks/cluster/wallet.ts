// Wallets for the cluster checks: made on one instance directly (from an address of their own, so
// the per-address token limit of the balancer's clients is untouched), and their ledger, which is
// free to read.

let walletCount = 0;

/** A new wallet with its 100 free credits; the token. */
export async function newWallet(instanceUrl: string): Promise<string> {
  walletCount++;
  const res = await fetch(`${instanceUrl}/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-forwarded-for": `192.0.2.${walletCount % 250 + 1}`,
    },
    body: "token=new",
  });
  const token = await res.text();
  if (res.status !== 200) throw new Error(`POST /token answered ${res.status}: ${token}`);
  return token;
}

export interface LedgerEntry {
  type: string;
  amount: number;
  balance: number;
  endpoint: string | null;
}

/** The wallet's newest ledger entries (up to 100) and its balance, read for free. */
export async function ledgerOf(
  url: string,
  token: string,
): Promise<{ entries: LedgerEntry[]; balance: number }> {
  const res = await fetch(`${url}/token/ledger?limit=100`, { headers: { "x-token": token } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /token/ledger answered ${res.status}: ${text}`);
  return { entries: JSON.parse(text).entries, balance: Number(res.headers.get("x-balance")) };
}

/** Sends a JSON body with the token; the status and the parsed answer (or its text). */
export async function sendJson(
  url: string,
  token: string,
  init: { method: string; body?: unknown },
): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: init.method,
    headers: { "x-token": token, "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch { /* a text answer */ }
  return { status: res.status, body };
}
