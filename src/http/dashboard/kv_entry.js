// @ts-check
/// <reference lib="dom" />
// The key-value browser's entry form (1 credit a call): open a value (shown as text in a text area,
// never as markup), create it (only if the key is free), edit it with its ETag (If-Match: a write
// made meanwhile is refused with 412 and nothing is lost), delete it, increment a counter; the time
// to live in human units. While the listing shows the entry's bucket, a save, a delete or an increment
// (each may add or remove a key) lists that page again (1 credit more, in the price its button shows).
import { byId, el } from "./view.js";
import { parseTtl } from "./ttl.js";
import { priceLabel, PRICES } from "./prices.js";

/** @typedef {import("./api.js").Session} Session */

/**
 * What the form knows of the entry: nothing (a save creates, never overwrites), its ETag (a save
 * applies only if nobody wrote in between), or that it was written here since (load it again).
 * @typedef {{ state: "new" } | { state: "loaded", etag: string } | { state: "stale" }} Known
 */

/**
 * @param {Session} session
 * @param {{ shows(bucket: string): boolean, refresh(): Promise<boolean> }} listing the keys listed
 */
export function kvEntryPanel(session, listing) {
  const form = /** @type {HTMLFormElement} */ (byId("kv-entry-form"));
  const bucket = /** @type {HTMLInputElement} */ (byId("kv-bucket"));
  const key = /** @type {HTMLInputElement} */ (byId("kv-key"));
  const value = /** @type {HTMLTextAreaElement} */ (byId("kv-value"));
  const ttl = /** @type {HTMLInputElement} */ (byId("kv-ttl"));
  const by = /** @type {HTMLInputElement} */ (byId("kv-by"));
  const note = byId("kv-etag");
  const save = /** @type {HTMLButtonElement} */ (byId("kv-save"));
  const remover = byId("kv-delete");
  const price = priceLabel(PRICES.kv);
  byId("kv-load").textContent = `Open (${price})`;
  const incr = byId("kv-incr");
  const relist = el("p", { class: "hint", id: "kv-relist", "aria-live": "polite" });
  note.after(relist);

  /** Whether a save or delete lists the keys again: the listing shows this bucket. */
  let relists = false;
  /** The prices of Save and Delete, with the listing again when it shows the entry's bucket. */
  function relabel() {
    relists = listing.shows(bucket.value.trim());
    const both = priceLabel(PRICES.kv * (relists ? 2 : 1));
    save.textContent = `Save (${both})`;
    remover.textContent = `Delete (${both})`;
    incr.textContent = `Increment (${both})`;
    relist.textContent = relists
      ? `A save, delete or increment lists this bucket's keys again: ${price} more, in the prices shown.`
      : "";
  }
  save.textContent = `Save (${price})`;
  remover.textContent = `Delete (${price})`;
  incr.textContent = `Increment (${price})`;
  bucket.addEventListener("input", relabel);

  /** The listing shown again after a change of `name`; `done` says what was done, with both costs. */
  async function listedAgain(/** @type {string} */ done, /** @type {Response} */ response) {
    if (!relists) return session.charged(done);
    const first = Number(response.headers.get("x-cost") ?? "0");
    if (await listing.refresh()) session.charged(`${done} Keys listed again.`, first);
  }

  /** @type {Known} */
  let known = { state: "new" };
  function know(/** @type {Known} */ next) {
    known = next;
    note.textContent = next.state === "loaded"
      ? `Version ${next.etag}: a save applies only if nobody wrote the entry since.`
      : next.state === "stale"
      ? "Written here since it was opened: open it again to edit it once more."
      : "Not opened: a save creates the entry, and is refused if the key exists.";
    save.disabled = next.state === "stale";
  }
  know({ state: "new" });
  key.addEventListener("input", () => know({ state: "new" }));

  const path = () => ({ bucket: bucket.value.trim(), key: key.value.trim() });
  const named = () => {
    const p = path();
    if (p.bucket !== "" && p.key !== "") return p;
    session.notify("Name the bucket (above) and the key first.");
    return undefined;
  };

  async function open(/** @type {string} */ inBucket, /** @type {string} */ name) {
    bucket.value = inBucket;
    key.value = name;
    const { data, error, response } = await session.client.GET("/kv/{bucket}/{key}", {
      params: { path: path() },
      parseAs: "text",
    });
    if (!session.answered(response, error) || typeof data !== "string") return;
    value.value = data;
    know({ state: "loaded", etag: response.headers.get("etag") ?? "*" });
    session.charged(`Opened ${name}.`);
    value.focus();
  }

  async function store(/** @type {SubmitEvent} */ event) {
    event.preventDefault();
    const p = named();
    const life = parseTtl(ttl.value);
    if (!p) return;
    if ("error" in life) return session.notify(life.error);
    const header = known.state === "loaded" ? { "if-match": known.etag } : { "if-none-match": "*" };
    const { error, response } = await session.client.POST("/kv/{bucket}/{key}", {
      params: { path: p, header, query: life.seconds ? { ttl: String(life.seconds) } : {} },
      body: value.value,
      bodySerializer: (text) => text,
      headers: { "content-type": "text/plain; charset=utf-8" },
      parseAs: "text",
    });
    if (!session.answered(response, error)) return;
    const made = known.state === "new";
    know({ state: "stale" });
    await listedAgain(`${made ? "Created" : "Saved"} ${p.key}.`, response);
  }

  async function remove() {
    const p = named();
    if (!p) return;
    const header = known.state === "loaded" ? { "if-match": known.etag } : {};
    const { error, response } = await session.client.DELETE("/kv/{bucket}/{key}", {
      params: { path: p, header },
      parseAs: "text",
    });
    if (!session.answered(response, error)) return;
    value.value = "";
    know({ state: "new" });
    await listedAgain(`Deleted ${p.key}.`, response);
  }

  async function increment() {
    const p = named();
    const life = parseTtl(ttl.value);
    if (!p) return;
    if ("error" in life) return session.notify(life.error);
    const { data, error, response } = await session.client.POST("/kv/{bucket}/{key}/incr", {
      params: {
        path: p,
        query: { by: by.value || "1", ...(life.seconds ? { ttl: String(life.seconds) } : {}) },
      },
      parseAs: "text",
    });
    if (!session.answered(response, error) || typeof data !== "string") return;
    value.value = data;
    know({ state: "stale" });
    await listedAgain(`${p.key} is now ${data}.`, response);
  }

  form.addEventListener("submit", store);
  byId("kv-load").addEventListener("click", () => {
    const p = named();
    if (p) open(p.bucket, p.key);
  });
  remover.addEventListener("click", remove);
  incr.addEventListener("click", increment);
  return { open, relabel };
}
