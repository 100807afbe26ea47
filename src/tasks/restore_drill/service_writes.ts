// Writes through the real service for the drill: new wallets and billed KV writes on the source
// cluster, so that the backups and the WAL after them hold what the service itself commits (sealed
// fields, call logs, usage) and not only what the seeder wrote.
import { generateMasterKeyText } from "../../secrets/master_key.ts";
import { freePort } from "../bench/system.ts";
import { type ServiceProcess, serviceProcess } from "../chaos/service_process.ts";
import { kvCall } from "../chaos/load.ts";

export interface DrillService {
  process: ServiceProcess;
  /** The master key the service seals with; replay on a restored cluster needs the same. */
  masterKey: string;
}

export function startService(databaseUrl: string): DrillService {
  const masterKey = generateMasterKeyText();
  const process = serviceProcess(freePort(), {
    ...Deno.env.toObject(),
    DATABASE_URL: databaseUrl,
    MASTER_KEY: masterKey,
    SMTP_PORT: "0",
    TRUST_PROXY: "1",
    LOG_REQUESTS: "0",
  });
  return { process, masterKey };
}

/** A new wallet (with its free credits) from an address of its own: the cluster checks' helper. */
export { newWallet } from "../cluster/wallet.ts";

/**
 * `calls` billed KV writes per wallet, one wallet after another; each must be acknowledged (200),
 * since the drill compares restored wallets against what was acknowledged. The number written.
 */
export async function billedWrites(
  baseUrl: string,
  { tokens, calls, tag }: { tokens: string[]; calls: number; tag: string },
) {
  let written = 0;
  for (const [client, token] of tokens.entries()) {
    for (let n = 0; n < calls; n++) {
      const key = `${tag}-${client}-${n}`;
      const answer = await kvCall({ baseUrl, callTimeoutMs: 10_000 }, { kind: "write", client, key, token });
      if (answer.status !== 200) {
        throw new Error(`POST /kv/.../${key} answered ${answer.status}: ${answer.phrase.slice(0, 200)}`);
      }
      written++;
    }
  }
  return written;
}
