// Reads the service configuration from the environment (CONTRACT section 11), once, with zod.
import { z } from "zod";
import type { ConnectionBounds } from "./net/connection_gate.ts";
import type { OpenOptions, PoolerMode } from "./db/connect.ts";
import { isLoopbackHost } from "./metrics/loopback.ts";

/** How an instance's delivery slots are shared out (webhooks/delivery_slots.ts applies them). */
export interface DeliverySlots {
  /** Attempts in flight at once in this instance. */
  total: number;
  /** Of them, at most this many for one wallet ... */
  perWallet: number;
  /** ... and this many for one endpoint of a wallet (a webhook, an alert channel). */
  perEndpoint: number;
}

/** DELIVERY_SLOTS, DELIVERY_SLOTS_PER_WALLET and DELIVERY_SLOTS_PER_ENDPOINT by default. */
export const DEFAULT_SLOTS: DeliverySlots = { total: 32, perWallet: 4, perEndpoint: 2 };

/** The shares as configured, each at most the one it is part of. */
export function deliverySlots(total: number, perWallet: number, perEndpoint: number): DeliverySlots {
  const wallet = Math.min(perWallet, total);
  return { total, perWallet: wallet, perEndpoint: Math.min(perEndpoint, wallet) };
}

const flag = z
  .enum(["", "0", "1", "false", "true", "off", "on", "no", "yes"], {
    error: (issue) => `must be one of 0, 1, true, false, on, off (got "${issue.input}")`,
  })
  .transform((v) => ["1", "true", "on", "yes"].includes(v));

const port = z.coerce.number().int().min(0).max(65535);
const millis = z.coerce.number().int("must be whole milliseconds").min(100, "must be at least 100")
  .max(3_600_000, "must be at most 3600000");
const slots = z.coerce.number().int("must be an integer").min(1, "must be at least 1")
  .max(1024, "must be at most 1024");
const recoverInterval = z.coerce.number().int("must be whole milliseconds").min(1000, "must be at least 1000")
  .max(86_400_000, "must be at most 86400000");
const connections = z.coerce.number().int("must be an integer").min(1, "must be at least 1")
  .max(1_000_000, "must be at most 1000000");

/** What the driver accepts as `target_session_attrs` (libpq's values but "any", its default). */
const SESSION_ATTRS = ["read-write", "read-only", "primary", "standby", "prefer-standby"];

/**
 * Why `url` is no Postgres URL the driver can open, or undefined when it is one. One host or several
 * (`postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write`, as libpq takes them): the
 * WHATWG URL parser refuses a comma list of hosts, so each host:port is checked on its own and the
 * rest of the URL with the first host in their place.
 */
export function postgresUrlProblem(url: string): string | undefined {
  const scheme = /^(postgres(?:ql)?):\/\//.exec(url);
  if (!scheme) return "must be a postgres:// or postgresql:// URL";
  const rest = url.slice(scheme[0].length);
  const authority = rest.split(/[/?#]/)[0];
  const hostList = authority.slice(authority.lastIndexOf("@") + 1);
  const hosts = hostList.split(",");
  for (const host of hosts) {
    // The driver splits each of several hosts at ":", which an IPv6 literal does not survive.
    if (hosts.length > 1 && host.startsWith("[")) {
      return `host "${host}": use a name for an IPv6 host in a list`;
    }
    const match = /^(\[[0-9a-f:.]+\]|[^:\[\]@\s]+)(?::(\d{1,5}))?$/i.exec(host);
    if (!match) return `host "${host}" must be host or host:port`;
    if (match[2] !== undefined && (Number(match[2]) < 1 || Number(match[2]) > 65535)) {
      return `port of "${host}" must be 1 to 65535`;
    }
  }
  let parsed: URL;
  try {
    parsed = new URL(url.replace(hostList, hosts[0]));
  } catch {
    return "Invalid URL";
  }
  const attrs = parsed.searchParams.get("target_session_attrs");
  if (attrs !== null && !SESSION_ATTRS.includes(attrs)) {
    return `target_session_attrs must be one of ${SESSION_ATTRS.join(", ")} (got "${attrs}")`;
  }
  return undefined;
}

const postgresUrl = z.string().superRefine((url, context) => {
  const problem = postgresUrlProblem(url);
  if (problem) context.addIssue({ code: "custom", message: problem });
});

const ConfigSchema = z.object({
  PORT: port.default(8787),
  HOSTNAME: z.string().min(1).default("0.0.0.0"),
  DATABASE_URL: postgresUrl.optional(),
  DATABASE_DIRECT_URL: postgresUrl.optional(),
  DATABASE_POOLER: z.enum(["none", "transaction"], {
    error: (issue) => `must be none or transaction (got "${issue.input}")`,
  }).default("none"),
  DATA_DIR: z.string().min(1).default("./data"),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  MAIL_DOMAIN: z.string().regex(/^[a-z0-9.-]+$/i, "must be a domain name").default("mail.localhost"),
  SMTP_PORT: port.default(2525),
  SMTP_TLS_CERT: z.string().min(1).optional(),
  SMTP_TLS_KEY: z.string().min(1).optional(),
  RECHARGE_LINK_1: z.url({ protocol: /^https?$/ }).default("https://buy.stripe.com/test_tier1"),
  RECHARGE_LINK_3: z.url({ protocol: /^https?$/ }).default("https://buy.stripe.com/test_tier3"),
  PAYMENT_WEBHOOK_SECRET: z.string().min(1).optional(),
  TRUST_PROXY: flag.default(false),
  TOKEN_IPV6_PREFIX: z.coerce.number().int("must be an integer").min(16, "must be at least 16")
    .max(128, "must be at most 128").default(64),
  UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE: z.coerce.number().int("must be an integer").min(1, "must be at least 1")
    .max(100_000, "must be at most 100000").default(60),
  UNSAFE_ALLOW_PRIVATE_WEBHOOKS: flag.default(false),
  SERVER_SECRET: z.string().min(16, "must be at least 16 characters").optional(),
  MASTER_KEY: z.string().min(1).optional(),
  MASTER_KEY_FILE: z.string().min(1).optional(),
  UNSAFE_MASTER_KEY_IN_DATABASE: flag.default(false),
  LOG_REQUESTS: flag.default(true),
  LEDGER_MAX_BATCH: z.coerce.number().int().min(1).max(1024).default(128),
  LEDGER_VALIDATE_EVENTS: flag.default(false),
  SMTP_RELAY_URL: z.url({ protocol: /^smtps?$/ }).optional(),
  ALERT_EMAIL_FROM: z.email("must be an email address").optional(),
  DELIVERY_RETRY_SCALE: z.coerce.number().positive("must be above 0").max(1, "must be at most 1").default(1),
  WEBHOOK_PAUSE_AFTER_FAILURES: z.coerce.number().int("must be an integer").min(1, "must be at least 1")
    .max(1_000_000, "must be at most 1000000").default(20),
  WEBHOOK_PAUSE_AFTER_HOURS: z.coerce.number().min(0, "must be at least 0").max(8760, "must be at most 8760")
    .default(24),
  DELIVERY_SLOTS: slots.default(DEFAULT_SLOTS.total),
  DELIVERY_SLOTS_PER_WALLET: slots.default(DEFAULT_SLOTS.perWallet),
  DELIVERY_SLOTS_PER_ENDPOINT: slots.default(DEFAULT_SLOTS.perEndpoint),
  WEBHOOK_RECOVER_INTERVAL_MS: recoverInterval.default(60_000),
  HTTP_HEADERS_TIMEOUT_MS: millis.default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: millis.default(30_000),
  HTTP_IDLE_TIMEOUT_MS: millis.default(60_000),
  HTTP_MAX_CONNECTIONS: connections.default(4096),
  HTTP_MAX_CONNECTIONS_PER_IP: connections.default(256),
  SMTP_IDLE_TIMEOUT_MS: millis.default(300_000),
  SMTP_MAX_CONNECTIONS: connections.default(64),
  SMTP_MAX_CONNECTIONS_PER_IP: connections.default(16),
  SMTP_PRESSURE_CONNECTIONS: connections.optional(),
  SMTP_PRESSURE_IDLE_MS: millis.default(10_000),
  ATTACHMENT_STORAGE_PER_WALLET: z.coerce.number().int("must be whole bytes")
    .min(1_048_576, "must be at least 1048576").max(1_099_511_627_776, "must be at most 1099511627776")
    .default(256 * 1024 * 1024),
  DATABASE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(1500),
  SHUTDOWN_DRAIN_MS: z.coerce.number().int("must be whole milliseconds").min(0, "must be at least 0")
    .max(600_000, "must be at most 600000").default(0),
  METRICS_PORT: port.optional(),
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
}).refine((c) => !(c.MASTER_KEY && c.MASTER_KEY_FILE), {
  path: ["MASTER_KEY_FILE"],
  message: "must not be set together with MASTER_KEY (one master key, from one place)",
}).refine((c) => (c.SMTP_TLS_CERT === undefined) === (c.SMTP_TLS_KEY === undefined), {
  path: ["SMTP_TLS_CERT"],
  message: "must be set together with SMTP_TLS_KEY (file paths of the STARTTLS certificate and key)",
}).refine((c) => c.DATABASE_URL || (!c.DATABASE_DIRECT_URL && c.DATABASE_POOLER === "none"), {
  path: ["DATABASE_POOLER"],
  message: "DATABASE_POOLER and DATABASE_DIRECT_URL need DATABASE_URL (the embedded database has no pooler)",
}).refine((c) => c.HTTP_HEADERS_TIMEOUT_MS <= c.HTTP_REQUEST_TIMEOUT_MS, {
  path: ["HTTP_HEADERS_TIMEOUT_MS"],
  message: "must be at most HTTP_REQUEST_TIMEOUT_MS (the headers are part of the request)",
}).refine((c) => c.METRICS_TOKEN !== undefined || isLoopbackHost(c.METRICS_HOST), {
  path: ["METRICS_HOST"],
  message: "is not loopback: set METRICS_TOKEN too (scrapes from elsewhere must present it)",
}).refine((c) => (c.SMTP_PRESSURE_CONNECTIONS ?? 0) <= c.SMTP_MAX_CONNECTIONS, {
  path: ["SMTP_PRESSURE_CONNECTIONS"],
  message: "must be at most SMTP_MAX_CONNECTIONS (pressure starts before the receiver is full)",
});

/** Timeouts and connection bounds of the HTTP server. */
export interface HttpLimits extends ConnectionBounds {
  /** A request's headers must arrive within this time of its first byte, else 408. */
  headersTimeoutMs: number;
  /** The whole request, body included, within this time of its first byte, else 408. */
  requestTimeoutMs: number;
  /** A keep-alive connection with no request in progress closes after this. */
  idleTimeoutMs: number;
}

export interface Config {
  port: number;
  hostname: string;
  databaseUrl?: string;
  /** Straight to Postgres past a pooler, for what needs a session (migrations); default databaseUrl. */
  databaseDirectUrl?: string;
  /** `transaction`: DATABASE_URL is a transaction-mode pooler, so no session state is used on it. */
  databasePooler: PoolerMode;
  dataDir: string;
  publicUrl: string;
  mailDomain: string;
  smtpPort: number;
  /** PEM files of the certificate offered with STARTTLS; without them STARTTLS is not offered. */
  smtpTls?: { certPath: string; keyPath: string };
  rechargeLinks: Record<"1" | "3", string>;
  paymentWebhookSecret?: string;
  trustProxy: boolean;
  /** How many leading bits of an IPv6 address make one client for the per-client limits (64: a /64). */
  tokenIpv6Prefix: number;
  /** Database lookups of tokens that name nothing, per client and minute (then 429). */
  unknownTokenLookupsPerMinute: number;
  allowPrivateWebhooks: boolean;
  serverSecret?: string;
  /** The master key (base64 of 32 bytes) that wraps every wallet's data key. */
  masterKey?: string;
  /** A file holding it instead. */
  masterKeyFile?: string;
  /** On Postgres without a master key: keep a generated one in the database (warned, unsafe). */
  unsafeMasterKeyInDatabase: boolean;
  logRequests: boolean;
  /** Most calls that share one ledger transaction; 1 turns group commit off. */
  ledgerMaxBatch: number;
  /** Check every event against its schema as it is appended (tests); typed code builds them. */
  ledgerValidateEvents: boolean;
  /** Where low-balance alert emails are sent through; unset: recorded as not sent. */
  smtpRelayUrl?: string;
  alertEmailFrom: string;
  /** Multiplies the webhook retry delays (CONTRACT section 8); below 1 only to make tests fast. */
  deliveryRetryScale: number;
  /** When a failing endpoint pauses its webhook (failed attempts or runs in a row, and hours of them). */
  webhookHealth: { pauseAfterFailures: number; pauseAfterMs: number };
  /**
   * Delivery attempts in flight at once in one instance, and the most one wallet and one endpoint
   * of a wallet may hold (each at most the one before it).
   */
  deliverySlots: DeliverySlots;
  /** One recover per webhook that queues deliveries in this time. */
  recoverIntervalMs: number;
  /** Timeouts and connection bounds of the HTTP server. */
  http: HttpLimits;
  /** Idle times and connection bounds of the SMTP receiver, and when it is under pressure. */
  smtpLimits:
    & { idleTimeoutMs: number; pressureConnections: number; pressureIdleMs: number }
    & ConnectionBounds;
  /** Bytes of email attachments one wallet may have stored (they are kept 7 days). */
  attachmentStoragePerWallet: number;
  /**
   * Longest a call waits for the database (and a new connection may take to open) before it gets
   * 503; /readyz answers 503 past it too.
   */
  databaseTimeoutMs: number;
  /**
   * On SIGTERM or SIGINT, how long /readyz answers 503 while requests are still served, before the
   * server stops accepting: long enough for a load balancer's health check to take it out.
   */
  shutdownDrainMs: number;
  /** The /metrics listener (METRICS_PORT, METRICS_HOST, METRICS_TOKEN); absent: metrics are off. */
  metrics?: { port: number; hostname: string; token?: string };
}

/** Parses the environment; returns the error text instead of throwing so main can exit 1 cleanly. */
export function parseConfig(env: Record<string, string | undefined>): Config | { error: string } {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = ConfigSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `Invalid ${i.path.join(".")}: ${i.message}`);
    return { error: lines.join("\n") };
  }
  const c = parsed.data;
  return {
    port: c.PORT,
    hostname: c.HOSTNAME,
    databaseUrl: c.DATABASE_URL,
    databaseDirectUrl: c.DATABASE_DIRECT_URL,
    databasePooler: c.DATABASE_POOLER,
    dataDir: c.DATA_DIR,
    publicUrl: (c.PUBLIC_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, ""),
    mailDomain: c.MAIL_DOMAIN.toLowerCase(),
    smtpPort: c.SMTP_PORT,
    ...(c.SMTP_TLS_CERT && c.SMTP_TLS_KEY
      ? { smtpTls: { certPath: c.SMTP_TLS_CERT, keyPath: c.SMTP_TLS_KEY } }
      : {}),
    rechargeLinks: { "1": c.RECHARGE_LINK_1, "3": c.RECHARGE_LINK_3 },
    paymentWebhookSecret: c.PAYMENT_WEBHOOK_SECRET,
    trustProxy: c.TRUST_PROXY,
    tokenIpv6Prefix: c.TOKEN_IPV6_PREFIX,
    unknownTokenLookupsPerMinute: c.UNKNOWN_TOKEN_LOOKUPS_PER_MINUTE,
    allowPrivateWebhooks: c.UNSAFE_ALLOW_PRIVATE_WEBHOOKS,
    serverSecret: c.SERVER_SECRET,
    masterKey: c.MASTER_KEY,
    masterKeyFile: c.MASTER_KEY_FILE,
    unsafeMasterKeyInDatabase: c.UNSAFE_MASTER_KEY_IN_DATABASE,
    logRequests: c.LOG_REQUESTS,
    ledgerMaxBatch: c.LEDGER_MAX_BATCH,
    ledgerValidateEvents: c.LEDGER_VALIDATE_EVENTS,
    smtpRelayUrl: c.SMTP_RELAY_URL,
    alertEmailFrom: c.ALERT_EMAIL_FROM ?? `alerts@${c.MAIL_DOMAIN.toLowerCase()}`,
    deliveryRetryScale: c.DELIVERY_RETRY_SCALE,
    webhookHealth: {
      pauseAfterFailures: c.WEBHOOK_PAUSE_AFTER_FAILURES,
      pauseAfterMs: Math.round(c.WEBHOOK_PAUSE_AFTER_HOURS * 3600 * 1000),
    },
    deliverySlots: deliverySlots(
      c.DELIVERY_SLOTS,
      c.DELIVERY_SLOTS_PER_WALLET,
      c.DELIVERY_SLOTS_PER_ENDPOINT,
    ),
    recoverIntervalMs: c.WEBHOOK_RECOVER_INTERVAL_MS,
    http: {
      headersTimeoutMs: c.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: c.HTTP_REQUEST_TIMEOUT_MS,
      idleTimeoutMs: c.HTTP_IDLE_TIMEOUT_MS,
      maxConnections: c.HTTP_MAX_CONNECTIONS,
      maxConnectionsPerIp: c.HTTP_MAX_CONNECTIONS_PER_IP,
    },
    smtpLimits: {
      idleTimeoutMs: c.SMTP_IDLE_TIMEOUT_MS,
      maxConnections: c.SMTP_MAX_CONNECTIONS,
      maxConnectionsPerIp: c.SMTP_MAX_CONNECTIONS_PER_IP,
      pressureConnections: c.SMTP_PRESSURE_CONNECTIONS ?? Math.ceil((c.SMTP_MAX_CONNECTIONS * 3) / 4),
      pressureIdleMs: c.SMTP_PRESSURE_IDLE_MS,
    },
    attachmentStoragePerWallet: c.ATTACHMENT_STORAGE_PER_WALLET,
    databaseTimeoutMs: c.DATABASE_TIMEOUT_MS,
    shutdownDrainMs: c.SHUTDOWN_DRAIN_MS,
    ...(c.METRICS_PORT === undefined ? {} : {
      metrics: {
        port: c.METRICS_PORT,
        hostname: c.METRICS_HOST,
        ...(c.METRICS_TOKEN ? { token: c.METRICS_TOKEN } : {}),
      },
    }),
  };
}

/** How to open this configuration's database (the caller adds pool sizes and timeouts). */
export function databaseOptions(config: Config): OpenOptions {
  return {
    databaseUrl: config.databaseUrl,
    directUrl: config.databaseDirectUrl,
    pooler: config.databasePooler,
    dataDir: config.dataDir,
  };
}

/** The configuration of this process, or exit 1 with a clear message. */
export function loadConfig(): Config {
  const config = parseConfig(Deno.env.toObject());
  if ("error" in config) {
    console.error(`Configuration error:\n${config.error}`);
    Deno.exit(1);
  }
  return config;
}
