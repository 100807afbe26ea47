// The wall clock, injected everywhere time matters so tests can control it.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock shifted by a fixed offset; the offset can be moved (tests of expiry and deactivation). */
export function offsetClock(
  base: Clock = systemClock,
): Clock & { advance(ms: number): void; offsetMs(): number } {
  let offset = 0;
  return {
    now: () => new Date(base.now().getTime() + offset),
    advance(ms: number) {
      offset += ms;
    },
    offsetMs: () => offset,
  };
}
