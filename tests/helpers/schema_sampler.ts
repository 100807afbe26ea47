// Values that a JSON Schema of /openapi.json calls valid, varied and seeded: optional properties present
// or absent, each enum value and union branch in turn, strings at their shortest, longest and between
// (patterns through randexp, pinned), maps with a few entries, times around now. Every value is checked
// against the whole schema with Ajv, so a rule across fields (oneOf, if/then, not) is kept by drawing
// again; after MAX_DRAWS the smallest value (examples first) is taken, and said so.
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import randexp from "randexp";
import { random } from "./sim/model.ts";

// randexp is CommonJS: its class is the module itself, typed as its `default`.
type RandExpClass = typeof import("randexp").default;
const RandExp = ((randexp as unknown as { default?: RandExpClass }).default ??
  randexp) as unknown as RandExpClass;

// deno-lint-ignore no-explicit-any
type Schema = any;
type RandRegExp = import("randexp").RandRegExp;

/** Draws of a value before the smallest one is taken instead. */
const MAX_DRAWS = 40;
/** Longest string drawn where the schema sets no maxLength. */
const FREE_LENGTH = 40;
/** Most entries of a map (additionalProperties) and items of an array drawn. */
const MAX_ENTRIES = 3;

/** A seeded source (the simulation's mulberry32), so a failing request can be drawn again from its seed. */
export function seededRandom(seed: number): () => number {
  return random(seed).next;
}

/**
 * How a value is drawn. `variant` 0 is the smallest value (examples, required fields only); from 1 on,
 * variant picks the enum value and the union branch (variant mod their count), and odd variants send
 * every optional field while even ones toss a coin for each.
 */
export interface Draw {
  variant: number;
  random: () => number;
}

export class SchemaSampler {
  readonly #components: Record<string, Schema>;
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<Schema, ValidateFunction>();
  /** Values that fell back to the smallest one, by what they were for. */
  readonly fellBack: string[] = [];

  constructor(document: { components?: { schemas?: Record<string, Schema> } }) {
    this.#components = document.components?.schemas ?? {};
    // Formats as Prism checks them: a URI is ASCII and parses; the others are left to their patterns.
    this.#ajv = new Ajv2020({ strict: false, formats: { uri: isUri, "date-time": true, email: true } });
    // $refs point into the document: it is the one schema they resolve against.
    this.#ajv.addSchema({ components: { schemas: this.#components } }, "doc");
  }

  /** Whether `value` keeps `schema`, with Ajv (draft 2020-12, OpenAPI 3.1's dialect). */
  valid(schema: Schema, value: unknown): boolean {
    let validate = this.#compiled.get(schema);
    if (!validate) {
      const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
      validate = this.#ajv.compile(rebased);
      this.#compiled.set(schema, validate);
    }
    return validate(value) as boolean;
  }

  /** A value `schema` calls valid, drawn as `draw` says; `what` names it if none could be drawn. */
  value(schema: Schema, draw: Draw, what: string): unknown {
    if (draw.variant > 0) {
      for (let attempt = 0; attempt < MAX_DRAWS; attempt++) {
        const value = this.#draw(schema, draw);
        if (this.valid(schema, value)) return value;
      }
      this.fellBack.push(what);
    }
    return smallest(this.#resolve(schema), this.#components);
  }

  #resolve(schema: Schema): Schema {
    return schema?.$ref ? this.#resolve(this.#components[schema.$ref.split("/").pop()]) : schema;
  }

  #pick<T>(choices: readonly T[], draw: Draw): T {
    // The first variants walk the choices in turn (each branch, each enum value); later ones draw.
    if (draw.variant <= choices.length) return choices[draw.variant - 1];
    return choices[Math.floor(draw.random() * choices.length)];
  }

  #draw(given: Schema, draw: Draw): unknown {
    const schema = this.#resolve(given);
    if (schema === undefined || schema === true) return this.#anyJson(draw, 2);
    // A schema without a type (a template): JSON of any shape, an object most of the time.
    const untyped = !schema.type && !schema.properties && !schema.anyOf && !schema.oneOf && !schema.allOf &&
      !schema.enum && schema.const === undefined;
    if (untyped) return draw.random() < 0.8 ? this.#anyObject(draw, 2) : this.#anyJson(draw, 2);
    if (schema.const !== undefined) return schema.const;
    if (schema.enum) return this.#pick(schema.enum, draw);
    const own = schema.properties !== undefined || schema.type !== undefined;
    const union = schema.oneOf ?? schema.anyOf;
    if (union && !own) return this.#draw(this.#pick(union, draw), draw);
    if (schema.allOf && !own) {
      return Object.assign(
        {},
        ...schema.allOf.map((part: Schema) => this.#draw(part, draw)),
      );
    }
    const type = Array.isArray(schema.type) ? this.#pick(schema.type, draw) : schema.type;
    if (type === "object" || (type === undefined && schema.properties)) {
      const drawn = this.#object(schema, draw);
      // An object's union states rules across its fields (a mailbox or a schedule): the branch's
      // required fields are added and the ones it forbids dropped, so each branch is tried in turn.
      const branch = union ? this.#resolve(this.#pick(union, draw)) : undefined;
      for (const rules of [schema, branch, ...(branch?.allOf ?? []), ...(schema.allOf ?? [])]) {
        if (rules) this.#keep(rules, drawn, { schema, draw });
      }
      return drawn;
    }
    if (type === "array") {
      const min = schema.minItems ?? 0;
      const max = Math.min(schema.maxItems ?? MAX_ENTRIES, Math.max(min, MAX_ENTRIES));
      const count = min + Math.floor(draw.random() * (max - min + 1));
      return Array.from({ length: count }, () => this.#draw(schema.items, draw));
    }
    if (type === "integer" || type === "number") return this.#number(schema, draw, type === "integer");
    if (type === "boolean") return draw.random() < 0.5;
    if (type === "null") return null;
    if (type === "string") return this.#string(schema, draw);
    return this.#anyJson(draw, 2);
  }

  /** Makes `drawn` keep a part's `required`, `not: { required }` and `if`/`then`/`else` rules. */
  #keep(rules: Schema, drawn: Record<string, unknown>, at: { schema: Schema; draw: Draw }) {
    const { schema, draw } = at;
    for (const name of rules.required ?? []) {
      if (!(name in drawn) && schema.properties?.[name]) {
        drawn[name] = this.#draw(schema.properties[name], draw);
      }
    }
    const forbidden = [rules.not, ...(rules.not?.anyOf ?? [])].flatMap((part) => part?.required ?? []);
    for (const name of forbidden) delete drawn[name];
    if (!rules.if) return;
    const rule = this.valid(rules.if, drawn) ? rules.then : rules.else;
    if (!rule) return;
    this.#keep(rule, drawn, at);
    // A nested rule (options.chat_id with format telegram): the inner object gets its fields.
    for (const [name, inner] of Object.entries(rule.properties ?? {}) as [string, Schema][]) {
      const value = drawn[name];
      if (!inner.required || typeof value !== "object" || value === null) continue;
      const outer = this.#resolve(schema.properties?.[name]) ?? {};
      for (const field of inner.required) {
        if (field in value) continue;
        const fieldSchema = { ...outer.additionalProperties, ...inner.properties?.[field] };
        (value as Record<string, unknown>)[field] = this.#draw(fieldSchema, draw);
      }
    }
  }

  #object(schema: Schema, draw: Draw): Record<string, unknown> {
    const drawn: Record<string, unknown> = {};
    for (const [name, property] of Object.entries(schema.properties ?? {}) as [string, Schema][]) {
      const required = schema.required?.includes(name);
      const sent = required || (draw.variant % 2 === 1 ? true : draw.random() < 0.5);
      if (sent) drawn[name] = this.#draw(property, draw);
    }
    const extra = schema.additionalProperties;
    if (extra && typeof extra === "object") {
      const most = Math.min(schema.maxProperties ?? MAX_ENTRIES, MAX_ENTRIES);
      const count = Math.floor(draw.random() * (most + 1));
      for (let i = 0; i < count; i++) {
        const name = this.#string({ type: "string", ...schema.propertyNames }, draw);
        if (!(name in drawn)) drawn[name] = this.#draw(extra, draw);
      }
    }
    return drawn;
  }

  #number(schema: Schema, draw: Draw, integer: boolean): number {
    const min = schema.minimum ??
      (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : -1000);
    const max = schema.maximum ??
      (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : min + 2000);
    // The bounds themselves, then anything between.
    const roll = draw.random();
    const value = roll < 0.25 ? min : roll < 0.5 ? max : min + draw.random() * (max - min);
    return integer ? Math.round(value) : value;
  }

  #string(schema: Schema, draw: Draw): string {
    if (schema.format === "date-time") return aroundNow(draw);
    if (schema.format === "uri" && draw.random() < 0.5 && schema.example) return schema.example;
    if (schema.format === "email") return `u${Math.floor(draw.random() * 1e6)}@example.com`;
    const min = schema.minLength ?? 0;
    const max = Math.min(schema.maxLength ?? FREE_LENGTH, Math.max(min, FREE_LENGTH * 2));
    // Boundary lengths first: the shortest, the longest, then anything between.
    const roll = draw.random();
    const length = roll < 0.25 ? min : roll < 0.5 ? max : min + Math.floor(draw.random() * (max - min + 1));
    if (schema.pattern) {
      const pattern = new RandExp(schema.pattern);
      pattern.max = Math.max(1, length);
      // Beyond ASCII half the time, but never in a URI.
      if (schema.format !== "uri" && draw.random() < 0.5) {
        (pattern as unknown as RandRegExp).defaultRange.add(0xa0, 0x24f);
      }
      pattern.randInt = (from: number, to: number) => from + Math.floor(draw.random() * (to - from + 1));
      return pattern.gen();
    }
    // A free string without a rule the schema states: its example half the time (a cron), else text.
    if (schema.example !== undefined && draw.random() < 0.5) return schema.example;
    const unicode = draw.random() < 0.5;
    return Array.from({ length }, () => {
      const code = unicode && draw.random() < 0.3
        ? 0xa0 + Math.floor(draw.random() * 0x1b0)
        : 0x20 + Math.floor(draw.random() * 0x5f);
      return String.fromCodePoint(code);
    }).join("");
  }

  #anyJson(draw: Draw, depth: number): unknown {
    const roll = draw.random();
    if (depth > 0 && roll < 0.5) return this.#anyObject(draw, depth);
    return roll < 0.7 ? `text ${Math.floor(draw.random() * 1000)}` : Math.floor(draw.random() * 100);
  }

  #anyObject(draw: Draw, depth: number): Record<string, unknown> {
    const entries = Math.floor(draw.random() * MAX_ENTRIES) + 1;
    return Object.fromEntries(
      Array.from({ length: entries }, (_, i) => [`f${i}`, this.#anyJson(draw, depth - 1)]),
    );
  }
}

/** A URI as Prism's format check takes one: RFC 3986's characters only, and a URL that parses. */
function isUri(text: string): boolean {
  return /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/.test(text) && URL.canParse(text);
}

/** An instant within a day of now, to the millisecond. */
function aroundNow(draw: Draw): string {
  return new Date(Date.now() + Math.round((draw.random() * 2 - 1) * 86_400_000)).toISOString();
}

/** The smallest value the schema calls valid: its example, else the least of each part. */
export function smallest(schema: Schema, components: Record<string, Schema>): unknown {
  if (schema === undefined || schema === true) return {};
  if (schema.$ref) return smallest(components[schema.$ref.split("/").pop()], components);
  if (schema.example !== undefined) return schema.example;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  // An object with its own properties is sampled from them: its combinators then only state rules
  // across fields (a webhook's mailbox or schedule), which the smallest object keeps.
  const own = schema.properties !== undefined;
  for (const choice of ["anyOf", "oneOf"]) {
    if (schema[choice] && !own) return smallest(schema[choice][0], components);
  }
  if (schema.allOf && !own) {
    return Object.assign({}, ...schema.allOf.map((part: Schema) => smallest(part, components)));
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === "object") {
    const properties = Object.entries(schema.properties ?? {}) as [string, Schema][];
    const wanted = properties.filter(([name, property]) =>
      schema.required?.includes(name) || property.example !== undefined
    );
    return Object.fromEntries(wanted.map(([name, property]) => [name, smallest(property, components)]));
  }
  if (type === "array") {
    return Array.from({ length: schema.minItems ?? 0 }, () => smallest(schema.items, components));
  }
  if (type === "integer" || type === "number") return schema.minimum ?? 0;
  if (type === "boolean") return false;
  if (schema.format === "date-time") return new Date(Date.now() - 3600_000).toISOString();
  if (type === "string") return "a".repeat(schema.minLength ?? 0);
  return {};
}
