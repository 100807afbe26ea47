// A local TCP port for a server about to start (a test's service, a task's cluster or pooler).
// It is picked below Linux's ephemeral range (32768-60999): a port the kernel handed out with
// `port: 0` is free only until some process's outgoing connection takes it as its local port,
// which happened between the check and the bind (EADDRINUSE) while the suite ran.
const LOWEST = 20_000;
const SPAN = 12_000;
const TRIES = 200;

export function freePort(): number {
  for (let i = 0; i < TRIES; i++) {
    const port = LOWEST + Math.floor(Math.random() * SPAN);
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  throw new Error(`No free port from ${LOWEST} to ${LOWEST + SPAN - 1} after ${TRIES} tries`);
}
