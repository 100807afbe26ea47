// Which fields of an event are sensitive: declared beside each schema in the catalogue with
// `sensitive(schema, paths)`. A path names fields with dots; `*` is every value of a record and
// `[]` every element of an array: "headers.*", "attachments[].filename". The ledger encrypts these
// fields with the wallet's data key when it appends; money fields are never listed.
import type { z } from "zod";

const declared = new WeakMap<z.ZodType, readonly string[]>();

/** Declares the sensitive fields of an event schema; returns the schema unchanged. */
export function sensitive<S extends z.ZodType>(schema: S, paths: readonly string[]): S {
  declared.set(schema, paths);
  return schema;
}

/** The sensitive paths declared for a schema (none: an empty list). */
export function sensitivePathsOf(schema: z.ZodType): readonly string[] {
  return declared.get(schema) ?? [];
}

/** A path's steps: "a[].b" is ["a", "[]", "b"]. */
export function pathSteps(path: string): string[] {
  return path.split(".").flatMap((part) => part.endsWith("[]") ? [part.slice(0, -2), "[]"] : [part]);
}

export type Pointer = (string | number)[];

/** Where the values a path names are in `data`: one pointer per value present. */
export function pointersOf(data: unknown, steps: readonly string[]): Pointer[] {
  const found: Pointer[] = [];
  const walk = (value: unknown, at: number, pointer: Pointer) => {
    if (value === undefined) return;
    if (at === steps.length) return void found.push(pointer);
    if (value === null || typeof value !== "object") return;
    const step = steps[at];
    if (step === "[]") {
      if (Array.isArray(value)) value.forEach((v, i) => walk(v, at + 1, [...pointer, i]));
    } else if (step === "*") {
      if (!Array.isArray(value)) {
        for (const [k, v] of Object.entries(value)) walk(v, at + 1, [...pointer, k]);
      }
    } else if (!Array.isArray(value) && Object.hasOwn(value, step)) {
      walk((value as Record<string, unknown>)[step], at + 1, [...pointer, step]);
    }
  };
  walk(data, 0, []);
  return found;
}

export function valueAt(data: unknown, pointer: Pointer): unknown {
  return pointer.reduce<any>((v, step) => v?.[step], data);
}

/** `data` with the value at `pointer` replaced, copying only the containers along the way. */
export function withValueAt<T>(data: T, pointer: Pointer, value: unknown): T {
  if (pointer.length === 0) return value as T;
  const [step, ...rest] = pointer;
  const copy: any = Array.isArray(data) ? [...data] : { ...(data as object) };
  copy[step] = withValueAt(copy[step], rest, value);
  return copy;
}
