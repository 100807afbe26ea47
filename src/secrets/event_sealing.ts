// Seals and opens the sensitive fields of events (declared in the catalogue) with the wallet's
// data key: one AES-256-GCM message per event holds every sensitive value with where it goes; the
// stored data keeps "[encrypted]" in their places and the message in `_enc`. Money and every other
// field stay in clear. A wallet whose key is destroyed reads "[erased]" in those places.
import { type EventType, SENSITIVE_PATHS, type StoredEvent } from "../../events/catalogue.ts";
import { pathSteps, type Pointer, pointersOf, valueAt, withValueAt } from "../../events/sensitivity.ts";
import type { DataKey } from "./data_keys.ts";

export const ENCRYPTED = "[encrypted]";
export const ERASED = "[erased]";
const VERSION = "v1:";

type EventData = Record<string, unknown>;

const STEPS: Partial<Record<EventType, string[][]>> = Object.fromEntries(
  Object.entries(SENSITIVE_PATHS).map(([type, paths]) => [type, paths!.map(pathSteps)]),
);

function pointersIn(type: string, data: unknown): Pointer[] {
  return (STEPS[type as EventType] ?? []).flatMap((steps) => pointersOf(data, steps));
}

/** The additional data of an event's message: it opens only in the event it was sealed for. */
function contextOf(event: Pick<StoredEvent, "walletId" | "version" | "type">): string {
  return `${event.walletId}/${event.version}/${event.type}`;
}

function replaced(data: EventData, pointers: Pointer[], value: unknown): EventData {
  return pointers.reduce((d, pointer) => withValueAt(d, pointer, value), data);
}

/**
 * The data to store for an event: unchanged without sensitive fields; with them, sealed with the
 * wallet's key, or (an erased wallet, key null) with them erased.
 */
export function sealEventData(event: StoredEvent, key: DataKey): unknown {
  const data = event.data as EventData;
  const pointers = pointersIn(event.type, data);
  if (pointers.length === 0) return data;
  if (key === null) return replaced(data, pointers, ERASED);
  const pairs = pointers.map((pointer) => [pointer, valueAt(data, pointer)]);
  const sealed = key.seal(JSON.stringify(pairs), contextOf(event));
  return { ...replaced(data, pointers, ENCRYPTED), _enc: VERSION + sealed };
}

/**
 * An event as read from the log, its sealed fields opened with the wallet's key; without a key
 * (erased, or undefined: none) they read "[erased]". Events written in clear come back as they are.
 */
export function openEvent(event: StoredEvent, key: DataKey | undefined): StoredEvent {
  const { _enc, ...data } = event.data as EventData;
  if (typeof _enc !== "string") return event;
  if (!key) return { ...event, data: replaced(data, pointersIn(event.type, data), ERASED) } as StoredEvent;
  if (!_enc.startsWith(VERSION)) {
    throw new Error(`Unknown sealed field version in event "${contextOf(event)}"`);
  }
  const pairs = JSON.parse(key.open(_enc.slice(VERSION.length), contextOf(event))) as [
    Pointer,
    unknown,
  ][];
  const opened = pairs.reduce((d, [pointer, value]) => withValueAt(d, pointer, value), data as EventData);
  return { ...event, data: opened } as StoredEvent;
}
