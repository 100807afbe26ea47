// A small HTTP client that speaks to the service the way a user's script would.
import type { Service } from "./service.ts";

export interface Answer {
  status: number;
  text: string;
  headers: Headers;
  cost: number | null;
  balance: number | null;
  json<T = any>(): T;
}

/** One request and its answer, as a validator of the OpenAPI document needs them. */
export interface Exchange {
  method: string;
  path: string;
  requestHeaders: Record<string, string>;
  requestBody?: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

let recording: Exchange[] | undefined;

/** From now on every call() is kept in the returned list, until stopRecording(). */
export function startRecording(): Exchange[] {
  recording = [];
  return recording;
}

export function stopRecording(): void {
  recording = undefined;
}

let clientCounter = 0;

/** A distinct client address per call (the service trusts X-Forwarded-For in tests). */
export function nextClientIp(): string {
  clientCounter++;
  return `198.51.${Math.floor(clientCounter / 250) % 250}.${(clientCounter % 250) + 1}.${Deno.pid % 1000}`
    .split(".").slice(0, 4).join(".");
}

export async function call(
  service: Service,
  method: string,
  path: string,
  options: { token?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers["x-token"] = options.token;
  const res = await fetch(service.url + path, { method, headers, body: options.body });
  const text = await res.text();
  recording?.push({
    method,
    path,
    requestHeaders: headers,
    ...(options.body === undefined ? {} : { requestBody: options.body }),
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: text,
  });
  const num = (name: string) => (res.headers.has(name) ? Number(res.headers.get(name)) : null);
  return {
    status: res.status,
    text,
    headers: res.headers,
    cost: num("x-cost"),
    balance: num("x-balance"),
    json: () => JSON.parse(text),
  };
}

/** Creates a wallet with its 100 free credits and returns the token. */
export async function newToken(service: Service): Promise<string> {
  const res = await call(service, "POST", "/token", {
    body: "token=new",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": nextClientIp() },
  });
  if (res.status !== 200) throw new Error(`POST /token answered ${res.status}: ${res.text}`);
  return res.text;
}

/** A client bound to one token. */
export function walletClient(service: Service, token: string) {
  return {
    token,
    get: (path: string, headers?: Record<string, string>) => call(service, "GET", path, { token, headers }),
    post: (path: string, body?: string, headers?: Record<string, string>) =>
      call(service, "POST", path, { token, body, headers }),
    put: (path: string, body?: string, headers?: Record<string, string>) =>
      call(service, "PUT", path, { token, body, headers }),
    patch: (path: string, body?: string, headers?: Record<string, string>) =>
      call(service, "PATCH", path, { token, body, headers }),
    delete: (path: string, headers?: Record<string, string>) =>
      call(service, "DELETE", path, { token, headers }),
    postJson: (path: string, value: unknown, headers?: Record<string, string>) =>
      call(service, "POST", path, {
        token,
        body: JSON.stringify(value),
        headers: { "content-type": "application/json", ...headers },
      }),
  };
}
