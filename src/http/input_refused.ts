// Input refused at the edge, before a route could use it: a body too large (413), late (408) or
// not UTF-8 (400), or a path with a broken percent-escape (400). answer_refused.ts answers it.

/** Answers that end the connection: the rest of the body is never read, not even to drain it. */
export const CLOSE_CONNECTION = { connection: "close" } as const;

/**
 * `charged`: bad input (400) is billed after authentication like any bad input; a body refused
 * unread (413) or never finished (408) costs nothing, though an authenticated call is still logged.
 */
export class InputRefused extends Error {
  constructor(readonly status: 400 | 408 | 413, message: string, readonly charged: boolean) {
    super(message);
    this.name = "InputRefused";
  }
}
