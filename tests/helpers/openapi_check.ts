// Checks recorded answers against the OpenAPI document with a validator that is not ours: Stoplight
// Prism in proxy mode. Each recorded request is sent again through Prism to a small upstream that
// answers exactly what the service answered then; Prism validates that answer against the document
// and names every violation in its `sl-violations` header.
import type { Exchange } from "./client.ts";

const PRISM = "npm:@stoplight/prism-cli@5.16.0";
const REPLAY_HEADER = "x-replay-index";

export interface Violation {
  /** The exchange's place in the recorded list. */
  index: number;
  exchange: string;
  message: string;
}

/** The upstream: answers the recorded exchange the request names. */
function replayServer(exchanges: Exchange[]) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.body?.cancel();
    const exchange = exchanges[Number(request.headers.get(REPLAY_HEADER))];
    if (!exchange) return new Response("No such exchange", { status: 599 });
    const headers = new Headers(exchange.headers);
    headers.delete("content-length");
    const body = exchange.status === 204 || exchange.status === 304 ? null : exchange.body;
    return new Response(body, { status: exchange.status, headers });
  });
}

/** Prism's proxy in front of `upstream`, once it listens; it forwards every request as it is. */
export async function startPrism(documentFile: string, upstream: string) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        PRISM,
        "proxy",
        documentFile,
        upstream,
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
      ],
      env: { NO_COLOR: "1", SCARF_ANALYTICS: "false" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let output = "";
    const decoder = new TextDecoder();
    const reader = child.stdout.getReader();
    const reading = (async () => {
      while (true) {
        const { value, done } = await reader.read();
        if (done) return false;
        output += decoder.decode(value);
        if (output.includes("Prism is listening")) return true;
      }
    })();
    child.stderr.pipeTo(new WritableStream({ write: (chunk) => void (output += decoder.decode(chunk)) }));
    const timeout = new Promise<false>((resolve) => setTimeout(() => resolve(false), 60_000));
    if (await Promise.race([reading, timeout])) {
      // Prism keeps logging: drain it so it never blocks on a full pipe (or dies of a closed one).
      reader.releaseLock();
      child.stdout.pipeTo(new WritableStream()).catch(() => {});
      return { url: `http://127.0.0.1:${port}`, stop: () => stopChild(child) };
    }
    await reader.cancel().catch(() => {});
    await stopChild(child);
    if (!output.includes("EADDRINUSE")) throw new Error(`Prism did not start:\n${output.slice(-4000)}`);
  }
  throw new Error("Prism found no free port");
}

async function stopChild(child: Deno.ChildProcess) {
  try {
    child.kill("SIGTERM");
  } catch { /* gone */ }
  await child.status;
}

function parses(body: string | undefined): boolean {
  try {
    JSON.parse(body ?? "");
    return true;
  } catch {
    return false;
  }
}

function describe(exchange: Exchange): string {
  return `${exchange.method} ${exchange.path} -> ${exchange.status}`;
}

/** Sends one exchange through Prism and returns what Prism says of the answer. */
async function check(prism: string, exchange: Exchange, index: number): Promise<Violation[]> {
  const headers = new Headers(exchange.requestHeaders);
  headers.set(REPLAY_HEADER, String(index));
  // Prism never answers a request whose JSON body does not parse; only the answer matters here.
  if (/json/i.test(headers.get("content-type") ?? "") && !parses(exchange.requestBody)) {
    headers.set("content-type", "text/plain");
  }
  const name = describe(exchange);
  const res = await fetch(prism + exchange.path, {
    method: exchange.method,
    headers,
    body: exchange.requestBody,
    signal: AbortSignal.timeout(10_000),
  }).catch((error) => error as Error);
  if (res instanceof Error) {
    return [{ index, exchange: name, message: `Prism did not answer: ${res.message}` }];
  }
  await res.body?.cancel();
  if (res.status !== exchange.status) {
    return [{
      index,
      exchange: name,
      message: `Prism answered ${res.status} instead of relaying the answer`,
    }];
  }
  const violations = JSON.parse(res.headers.get("sl-violations") ?? "[]") as {
    location: string[];
    severity: string;
    message: string;
  }[];
  return violations
    .filter((violation) => violation.location[0] === "response")
    .map((violation) => ({ index, exchange: name, message: `${violation.severity}: ${violation.message}` }));
}

/** Every violation of the document by the recorded answers, as Prism sees them. */
export async function answersViolating(document: unknown, exchanges: Exchange[]): Promise<Violation[]> {
  const dir = await Deno.makeTempDir({ prefix: "openapi-check-" });
  const documentFile = `${dir}/openapi.json`;
  await Deno.writeTextFile(documentFile, JSON.stringify(document));
  const upstream = replayServer(exchanges);
  const prism = await startPrism(documentFile, `http://127.0.0.1:${upstream.addr.port}`);
  try {
    const violations: Violation[] = [];
    for (const [index, exchange] of exchanges.entries()) {
      violations.push(...await check(prism.url, exchange, index));
    }
    return violations;
  } finally {
    await prism.stop();
    await upstream.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}
