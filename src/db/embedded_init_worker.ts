// Worker: creates the embedded database in the directory it is sent, closes it, and answers.
import { openPglite } from "./embedded_pglite.ts";

self.onmessage = async (event: MessageEvent<{ pgDataDir: string }>) => {
  try {
    const db = await openPglite(event.data.pgDataDir);
    await db.close();
    self.postMessage({});
  } catch (error) {
    self.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
};
