// The zod schemas of the key-value calls: path, query and header rules (CONTRACT section 5, issue
// 15). They validate REST's requests and MCP's arguments, and are what /openapi.json says of them.
import { z } from "@hono/zod-openapi";
import { hasAtMostCodePoints } from "../code_points.ts";
import { MAX_COUNTER, MAX_TTL_SECONDS } from "./commands.ts";
import { MAX_LIST_LIMIT } from "./listing.ts";
import { ETAG_CONDITION, ETAG_CONDITION_RULE } from "./preconditions.ts";
import { integerParam } from "../calls/integer_pattern.ts";

export const MAX_NAME_CHARS = 30;
export const MAX_VALUE_CHARS = 1000;
const MAX_CURSOR_CHARS = 1024;

// deno-lint-ignore no-control-regex
const hasControl = (s: string) => /[\u0000-\u001f\u007f]/.test(s);

// The rules below as JSON Schema: lengths count code points there too (RFC 8259 characters).
const NAME_CHARACTERS = "[^\\u0000-\\u001f\\u007f/]";
/** Not `.` or `..`: in a URL path they are steps, not names, so REST could never reach them. */
const NOT_DOTS = "(?!\\.\\.?$)";
const KEY_PATTERN = `^${NOT_DOTS}${NAME_CHARACTERS}+$`;
/** Also: not `reserved-...`, not `...---`. */
export const BUCKET_PATTERN = `^${NOT_DOTS}(?!reserved-)(?![\\s\\S]*---$)${NAME_CHARACTERS}+$`;
/** The phrase of a name that is a path step; REST and MCP refuse it alike. */
export const DOTS_RULE = 'must not be "." or ".."';

function kvName(field: string, pattern: string) {
  return z.string()
    .min(1, `must be 1 to ${MAX_NAME_CHARS} characters`)
    .refine((s) => hasAtMostCodePoints(s, MAX_NAME_CHARS), `must be 1 to ${MAX_NAME_CHARS} characters`)
    .refine((s) => !hasControl(s), "must not contain control characters")
    .refine((s) => !s.includes("/"), 'must not contain "/"')
    .refine((s) => s !== "." && s !== "..", DOTS_RULE)
    .openapi({ param: { name: field, in: "path" }, example: field === "bucket" ? "default" : "greeting" })
    .meta({ minLength: 1, maxLength: MAX_NAME_CHARS, pattern });
}

const bucket = kvName("bucket", BUCKET_PATTERN)
  .refine((s) => !s.startsWith("reserved-"), 'must not start with "reserved-"')
  .refine((s) => !s.endsWith("---"), 'must not end with "---"')
  .meta({
    description: `1 to ${MAX_NAME_CHARS} characters, no control characters and no "/"; not "." or "..", ` +
      'not starting with "reserved-", not ending with "---"',
  });
/** The bucket rule, for schemas that take bucket names elsewhere (a scoped key's `buckets`). */
export const BUCKET_DOC = { minLength: 1, maxLength: MAX_NAME_CHARS, pattern: BUCKET_PATTERN };

export const KvBucketPath = z.object({ bucket });
export const KvPath = z.object({
  bucket,
  key: kvName("key", KEY_PATTERN)
    .meta({
      description: `1 to ${MAX_NAME_CHARS} characters, no control characters and no "/"; not "." or ".."`,
    }),
});

const ttl = integerParam(0, MAX_TTL_SECONDS);

export const KvWriteQuery = z.object({
  ttl: ttl.openapi({
    description: "Seconds to live; 0 or absent means the maximum, 30 days",
    example: "3600",
  }),
});

/** The value's text: any but U+0000, which Postgres cannot store (the body reader refuses it). */
export const KvValue = z.string()
  .refine((s) => hasAtMostCodePoints(s, MAX_VALUE_CHARS), `must be at most ${MAX_VALUE_CHARS} characters`)
  .openapi({
    description: `Any text without U+0000, at most ${MAX_VALUE_CHARS} characters`,
    example: "hello",
  })
  .meta({ maxLength: MAX_VALUE_CHARS, pattern: "^[^\\u0000]*$" });

export const KvIncrQuery = z.object({
  by: integerParam(0, MAX_COUNTER, { signed: true })
    .openapi({ description: "What to add, may be negative; default 1", example: "5" }),
  ttl: ttl.openapi({
    description: "Seconds to live of a key the increment creates (an existing key keeps its expiry); " +
      "0 or absent means the maximum, 30 days",
    example: "3600",
  }),
});

export const KvListQuery = z.object({
  prefix: z.string()
    .refine((s) => hasAtMostCodePoints(s, MAX_NAME_CHARS), `must be at most ${MAX_NAME_CHARS} characters`)
    .refine((s) => !hasControl(s), "must not contain control characters")
    .refine((s) => !s.includes("/"), 'must not contain "/"')
    .refine((s) => s !== "." && s !== "..", DOTS_RULE)
    .optional()
    .openapi({ description: "Only keys that start with it; default all", example: "user:" })
    .meta({ maxLength: MAX_NAME_CHARS, pattern: `^${NAME_CHARACTERS}*$` }),
  limit: integerParam(1, MAX_LIST_LIMIT).openapi({
    description: `Most keys in the answer, 1 to ${MAX_LIST_LIMIT}; default ${MAX_LIST_LIMIT}`,
    example: "20",
  }),
  cursor: z.string()
    .max(MAX_CURSOR_CHARS, "must be a nextCursor of a listing of the same bucket and prefix")
    .optional()
    .openapi({
      description:
        "The `nextCursor` of the previous page of the same bucket and prefix, as it was answered " +
        "(opaque); any other value is a billed `400`",
    }),
});

export const KvListAnswer = z.object({
  keys: z.array(z.object({
    key: z.string(),
    expiresAt: z.string().openapi({ format: "date-time" }),
    size: z.number().int().openapi({ description: "Bytes of the value in UTF-8" }),
  })).openapi({ description: "Live keys in code-point (UTF-8 byte) order; expired keys never appear" }),
  nextCursor: z.string().nullable().openapi({
    description: "Pass it as `cursor` for the next page; null when the listing is complete. " +
      "A page may hold fewer keys than `limit` and still have a next one",
  }),
});

const etagCondition = (description: string) =>
  z.string().regex(ETAG_CONDITION, ETAG_CONDITION_RULE).optional().openapi({ description });

/** The conditional-request headers a KV write honours (RFC 9110 section 13). */
export const KvConditionHeaders = z.object({
  "if-match": etagCondition(
    "Apply only if the entry exists and its ETag is one of these (`*`: any ETag); otherwise 412, charged, " +
      "nothing changes",
  ),
  "if-none-match": etagCondition(
    "`*`: apply only if the key is missing (create, never overwrite); a list of ETags: only if the entry's " +
      "ETag is none of them; otherwise 412, charged, nothing changes",
  ),
});

/** The ETag header of a read: the entry's version, which changes on every write of the key. */
export const EntryEtagHeader = {
  ETag: {
    description:
      'The entry\'s version as a strong ETag, e.g. `"42"`; it changes on every write of the key. ' +
      "Send it back as If-Match to write only if nobody wrote in between",
    required: true,
    schema: { type: "string" as const, pattern: '^"[0-9]+"$' },
  },
};

/** GET /kv: the bucket listing's query, the key listing's rules (a prefix of a name, a page, a cursor). */
export const KvBucketsQuery = z.object({
  prefix: KvListQuery.shape.prefix.openapi({ description: "Only buckets that start with it; default all" }),
  limit: KvListQuery.shape.limit,
  cursor: z.string()
    .max(MAX_CURSOR_CHARS, "must be a nextCursor of a bucket listing with the same prefix")
    .optional()
    .openapi({
      description:
        "The `nextCursor` of the previous page with the same prefix, as it was answered (opaque); " +
        "any other value is a billed `400`",
    }),
});

export const KvBucketsAnswer = z.object({
  buckets: z.array(z.string()).openapi({
    description: "Names of buckets with a live key, in the database's order of names",
  }),
  nextCursor: z.string().nullable().openapi({
    description: "Pass it as `cursor` for the next page; null when the listing is complete. " +
      "A page may hold fewer names than `limit` (none, even) and still have a next one",
  }),
});
