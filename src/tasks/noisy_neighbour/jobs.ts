// The main thread's side of a worker job: start it, wait until it runs, stop it, get its result.
import type { JobMessage, JobRequest } from "./worker.ts";

export interface Job<T> {
  /** Resolves once the job runs at full strength (an attack after its set-up). */
  ready: Promise<void>;
  /** Asks the job to stop (an attack); a load stops by itself. */
  stop(): void;
  /** Its result; the worker is ended after it. */
  done: Promise<T>;
}

export function startJob<T>(request: JobRequest): Job<T> {
  const worker = new Worker(new URL("./worker.ts", import.meta.url).href, { type: "module" });
  let markReady!: () => void;
  let fail!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    fail = reject;
  });
  const done = new Promise<T>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<JobMessage>) => {
      const message = event.data;
      if (message.type === "ready") return markReady();
      worker.terminate();
      if (message.type === "done") return resolve(message.result as T);
      const error = new Error(`Worker job ${request.job} failed: ${message.message}`);
      fail(error);
      reject(error);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      worker.terminate();
      const error = new Error(`Worker job ${request.job} failed: ${event.message}`);
      fail(error);
      reject(error);
    };
  });
  // A failure is reported through `done`; `ready` must not also be an unhandled rejection.
  ready.catch(() => {});
  worker.postMessage(request);
  return { ready, done, stop: () => worker.postMessage({ job: "stop" }) };
}
