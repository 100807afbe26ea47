// Worker: creates the embedded database in memory, then writes its files to the directory it is
// sent (through a temporary sibling renamed into place, so that a crash leaves no half database).
// PGlite's own initdb into a directory on disk makes a tarball of it as a Blob, which outlives a
// terminated worker in Deno's process-wide blob store (40 MB for good); files written from the
// in-memory copy leave nothing behind.
import { PGlite } from "@electric-sql/pglite";
import { embeddedStartParams } from "./embedded_pglite.ts";

/** Where PGlite keeps the database in its Emscripten file system. */
const PGDATA = "/pglite/data";

interface EmscriptenFs {
  readdir(path: string): string[];
  stat(path: string): { mode: number };
  isDir(mode: number): boolean;
  open(path: string, flags: string): unknown;
  read(stream: unknown, buffer: Uint8Array, offset: number, length: number): number;
  close(stream: unknown): void;
}

/** Files are copied through one buffer: a copy of each (40 MB in all) would stay in the process's heap. */
const COPY_BUFFER_BYTES = 1024 * 1024;

function copyFile(fs: EmscriptenFs, from: string, to: string, mode: number, buffer: Uint8Array) {
  const source = fs.open(from, "r");
  const target = Deno.openSync(to, { write: true, createNew: true, mode });
  try {
    for (let read; (read = fs.read(source, buffer, 0, buffer.length)) > 0;) {
      const chunk = buffer.subarray(0, read);
      for (let written = 0; written < read;) written += target.writeSync(chunk.subarray(written));
    }
  } finally {
    target.close();
    fs.close(source);
  }
}

function copyTree(fs: EmscriptenFs, from: string, to: string, buffer: Uint8Array) {
  Deno.mkdirSync(to, { mode: fs.stat(from).mode & 0o777 });
  for (const name of fs.readdir(from)) {
    if (name === "." || name === "..") continue;
    const mode = fs.stat(`${from}/${name}`).mode;
    if (fs.isDir(mode)) copyTree(fs, `${from}/${name}`, `${to}/${name}`, buffer);
    else copyFile(fs, `${from}/${name}`, `${to}/${name}`, mode & 0o777, buffer);
  }
}

async function createDatabase(pgDataDir: string) {
  const db = await PGlite.create({ startParams: embeddedStartParams() });
  // The file system outlives the database: read after a clean shutdown, the files are consistent.
  const fs = (db.Module as unknown as { FS: EmscriptenFs }).FS;
  await db.close();
  const staging = `${pgDataDir}.new-${Deno.pid}`;
  await Deno.remove(staging, { recursive: true }).catch(() => {});
  copyTree(fs, PGDATA, staging, new Uint8Array(COPY_BUFFER_BYTES));
  // An empty directory left by an earlier start is replaced; one with files in it is not touched.
  await Deno.remove(pgDataDir).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  await Deno.rename(staging, pgDataDir);
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<{ pgDataDir: string }>) => void) | null;
  postMessage(message: { error?: string }): void;
}

const scope = self as unknown as WorkerScope;
scope.onmessage = async (event) => {
  try {
    await createDatabase(event.data.pgDataDir);
    scope.postMessage({});
  } catch (error) {
    scope.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
};
