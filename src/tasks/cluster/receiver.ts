// The webhook receiver of `deno task cluster`: HTTPS on 127.0.0.1 with a certificate made for the
// run (openssl), which the instances trust through NODE_EXTRA_CA_CERTS; they must also run with
// UNSAFE_ALLOW_PRIVATE_WEBHOOKS to call a loopback address. It records every request.
import { run } from "../bench/system.ts";

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

export interface HttpsReceiver {
  url: string;
  /** The certificate (PEM file) to trust: NODE_EXTRA_CA_CERTS of the instances. */
  certificateFile: string;
  received: Received[];
  /** The requests to `path` so far. */
  at(path: string): Received[];
  /** Resolves once `count` requests to `path` arrived; throws past the timeout. */
  waitFor(path: string, count: number, timeoutMs: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startHttpsReceiver(dir: string): Promise<HttpsReceiver> {
  const certificateFile = `${dir}/receiver-cert.pem`;
  const keyFile = `${dir}/receiver-key.pem`;
  await run("openssl", [
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
    ...["-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
    ...["-keyout", keyFile, "-out", certificateFile],
  ]);
  const received: Received[] = [];
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(certificateFile),
    key: await Deno.readTextFile(keyFile),
    onListen() {},
  }, async (request) => {
    received.push({
      path: new URL(request.url).pathname,
      headers: Object.fromEntries(request.headers),
      body: await request.text(),
      at: Date.now(),
    });
    return new Response("ok");
  });
  const at = (path: string) => received.filter((r) => r.path === path);
  return {
    url: `https://127.0.0.1:${server.addr.port}`,
    certificateFile,
    received,
    at,
    async waitFor(path, count, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (at(path).length < count) {
        if (performance.now() > deadline) {
          throw new Error(`The receiver got ${at(path).length} of ${count} requests to ${path} in time`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return at(path);
    },
    close: () => server.shutdown(),
  };
}
