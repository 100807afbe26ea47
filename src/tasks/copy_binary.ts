// Encodes rows in COPY's binary format (PGCOPY) for the column types the read models use: no
// text formatting of dates and numbers, and the bytes go to the socket as they are.

/** The column types this encoder writes, as format_type names them. */
const SUPPORTED = new Set(["text", "integer", "bigint", "boolean", "timestamp with time zone", "jsonb"]);
const SIGNATURE = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00];
/** Milliseconds from the Unix epoch to Postgres' epoch (2000-01-01). */
const PG_EPOCH_MS = 946_684_800_000;
const TWO_32 = 2 ** 32;
const JSONB_VERSION = 1;
/** Text up to this length is tried as ASCII first. */
const SHORT_TEXT = 64;

export function binaryEncodable(types: readonly string[]): boolean {
  return types.every((type) => SUPPORTED.has(type));
}

type FieldWriter = (encoder: CopyBinaryEncoder, value: unknown) => void;

function fieldWriter(type: string): FieldWriter {
  switch (type) {
    case "integer":
      return (e, v) => e.int32Field(Number(v));
    case "bigint":
      return (e, v) => e.int64Field(Number(v));
    case "boolean":
      return (e, v) => e.boolField(v === true);
    case "timestamp with time zone":
      return (e, v) => e.timestampField(v instanceof Date ? v : new Date(v as string));
    case "jsonb":
      return (e, v) => e.textField(JSON.stringify(v), JSONB_VERSION);
    case "text":
      return (e, v) => e.textField(typeof v === "string" ? v : String(v));
    default:
      throw new Error(`Unsupported column type "${type}": binary COPY writes ${[...SUPPORTED].join(", ")}`);
  }
}

export class CopyBinaryEncoder {
  private buffer: Uint8Array;
  private view: DataView;
  private at = 0;
  private readonly writers: FieldWriter[];
  private readonly utf8 = new TextEncoder();

  constructor(types: readonly string[], initialBytes = 1 << 20) {
    this.writers = types.map(fieldWriter);
    this.buffer = new Uint8Array(initialBytes);
    this.view = new DataView(this.buffer.buffer);
    this.buffer.set(SIGNATURE, 0);
    this.at = SIGNATURE.length;
    this.view.setInt32(this.at, 0); // flags
    this.view.setInt32(this.at + 4, 0); // header extension length
    this.at += 8;
  }

  /** Appends one tuple; values in column order, null or undefined for NULL. */
  row(values: readonly unknown[]) {
    this.reserve(2);
    this.view.setInt16(this.at, values.length);
    this.at += 2;
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      if (value === null || value === undefined) {
        this.reserve(4);
        this.view.setInt32(this.at, -1);
        this.at += 4;
      } else {
        this.writers[i](this, value);
      }
    }
  }

  /** Appends the end-of-data marker. */
  end() {
    this.reserve(2);
    this.view.setInt16(this.at, -1);
    this.at += 2;
  }

  /** The bytes encoded since the last take; the buffer is reused after. */
  take(): Uint8Array {
    const bytes = this.buffer.slice(0, this.at);
    this.at = 0;
    return bytes;
  }

  int32Field(n: number) {
    this.reserve(8);
    this.view.setInt32(this.at, 4);
    this.view.setInt32(this.at + 4, n);
    this.at += 8;
  }

  int64Field(n: number) {
    this.reserve(12);
    this.view.setInt32(this.at, 8);
    this.writeInt64(this.at + 4, n);
    this.at += 12;
  }

  boolField(b: boolean) {
    this.reserve(5);
    this.view.setInt32(this.at, 1);
    this.buffer[this.at + 4] = b ? 1 : 0;
    this.at += 5;
  }

  timestampField(date: Date) {
    const ms = date.getTime() - PG_EPOCH_MS;
    this.reserve(12);
    this.view.setInt32(this.at, 8);
    if (Number.isSafeInteger(ms * 1000)) this.writeInt64(this.at + 4, ms * 1000);
    else this.view.setBigInt64(this.at + 4, BigInt(ms) * 1000n);
    this.at += 12;
  }

  /** UTF-8 text, after an optional version byte (jsonb's). */
  textField(text: string, versionByte?: number) {
    const prefix = versionByte === undefined ? 0 : 1;
    this.reserve(4 + prefix + text.length * 3);
    const start = this.at + 4;
    if (prefix) this.buffer[start] = versionByte!;
    const written = this.encodeUtf8(text, start + prefix);
    this.view.setInt32(this.at, prefix + written);
    this.at = start + prefix + written;
  }

  /** Short ASCII text is copied by hand: cheaper than a call into the encoder for each field. */
  private encodeUtf8(text: string, at: number): number {
    if (text.length <= SHORT_TEXT) {
      let i = 0;
      for (; i < text.length; i++) {
        const code = text.charCodeAt(i);
        if (code >= 0x80) break;
        this.buffer[at + i] = code;
      }
      if (i === text.length) return i;
    }
    return this.utf8.encodeInto(text, this.buffer.subarray(at)).written;
  }

  private writeInt64(at: number, n: number) {
    const high = Math.floor(n / TWO_32);
    this.view.setInt32(at, high);
    this.view.setUint32(at + 4, n - high * TWO_32);
  }

  private reserve(bytes: number) {
    if (this.at + bytes <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.at + bytes));
    grown.set(this.buffer.subarray(0, this.at));
    this.buffer = grown;
    this.view = new DataView(grown.buffer);
  }
}
