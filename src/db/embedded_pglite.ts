// The embedded PGlite with the settings the service runs it with: opened in this isolate, or made
// first, for a data directory that has no database yet, in a worker that then ends.
import { PGlite } from "@electric-sql/pglite";

/**
 * PGlite's own start parameters (its durability settings among them, unchanged) plus a smaller
 * shared_buffers: Postgres's default 128 MB is zeroed inside the WebAssembly heap at start, so it is
 * all resident from the first second; the embedded database is for a first run and development,
 * and pages it no longer holds are read again from the OS page cache.
 */
export function embeddedStartParams(): string[] {
  return [...PGlite.defaultStartParams, "-c", "shared_buffers=16MB"];
}

export async function openPglite(pgDataDir: string): Promise<PGlite> {
  return await PGlite.create({ dataDir: pgDataDir, startParams: embeddedStartParams() });
}

/**
 * A new database is made in a worker (embedded_init_worker.ts): PGlite's initdb starts a second
 * Postgres and copies its heap, several hundred MB that a garbage collection of this isolate would
 * give back only much later; the worker's isolate ends with all of it.
 */
export async function createInWorker(pgDataDir: string): Promise<void> {
  const worker = new Worker(new URL("./embedded_init_worker.ts", import.meta.url), { type: "module" });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<{ error?: string }>) => {
        if (event.data.error) reject(new Error(`Cannot create the embedded database: ${event.data.error}`));
        else resolve();
      };
      worker.onerror = (event) => {
        event.preventDefault();
        reject(new Error(`Cannot create the embedded database: ${event.message}`));
      };
      worker.postMessage({ pgDataDir });
    });
  } finally {
    worker.terminate();
  }
}
