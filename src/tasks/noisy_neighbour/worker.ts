// A worker thread of the task: runs the victim's KV load, or one attack from set-up to stop, off
// the main thread, so that neither delays the other's clients nor the main thread's timing.
/// <reference lib="deno.worker" />
import { victimKvLoad, type VictimKvParams } from "./victim_kv.ts";
import { ATTACK_RUNNERS } from "./attacks/mod.ts";
import type { AttackContext } from "./attacks/attack.ts";
import type { AttackName } from "./settings.ts";

export type JobRequest =
  | { job: "victim-kv"; params: VictimKvParams }
  | { job: "attack"; name: AttackName; context: AttackContext };

export type JobMessage =
  | { type: "ready" }
  | { type: "done"; result: unknown }
  | { type: "error"; message: string };

const post = (message: JobMessage) => self.postMessage(message);
let stop: (() => void) | undefined;

self.onmessage = async (event: MessageEvent<JobRequest | { job: "stop" }>) => {
  const request = event.data;
  try {
    if (request.job === "stop") return stop?.();
    if (request.job === "victim-kv") {
      post({ type: "ready" });
      return post({ type: "done", result: await victimKvLoad(request.params) });
    }
    const running = await ATTACK_RUNNERS[request.name](request.context);
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    post({ type: "ready" });
    await stopped;
    post({ type: "done", result: await running.stop() });
  } catch (error) {
    post({ type: "error", message: error instanceof Error ? error.stack ?? error.message : String(error) });
  }
};
