// `deno task layout [root]`: the folder picture of src/, events/ and projections/ from Deno's own
// module graph (`deno info --json`): which folder imports which, the imports that run back up the
// floors declared below, the folder loops and each folder's entry points. It exits 1 when a loop is
// closed by an import that is not in ALLOWED_BACK_UP: a new loop. The vendored driver is left out.
import { pathToFileURL } from "node:url";
import { type FileImport, type Layout, layoutOf, type LayoutRules, roomOf } from "./layout_graph.ts";

/**
 * The floors, top first: wiring, then the transports, the delivery sources (alerts, schedules), the
 * delivery engine, the features, the call layer, the ledger, the read models (with the pure rules
 * their folds use), the log and the database (notes/structure-review.md section 1, the drawing of
 * 2026-11-25, plus the rooms made since). An import from a lower floor to a higher one runs back
 * up. Moving a room is a decision about the design: make it here, in the same change.
 */
export const FLOORS: string[][] = [
  ["src/tasks/", "src/main.ts"],
  ["src/service_ledger.ts", "src/delivery_channels.ts", "src/service_metrics.ts"],
  // The transports side by side: HTTP (which hosts the MCP route), MCP and SMTP.
  ["src/http/", "src/mcp/", "src/email/", "src/sweeper.ts"],
  // Delivery sources: they queue into the delivery engine's outbox.
  ["src/alerts/", "src/schedules/"],
  ["src/webhooks/"],
  ["src/kv/", "src/keys/", "src/wallets/", "src/payments/", "src/attachments/"],
  // A billed call of any transport: its answer, parsing, price and runner, over the ledger.
  ["src/calls/"],
  ["src/ledger/"],
  ["projections/", "src/periodic.ts", "src/secrets/"],
  [
    "events/",
    "src/config.ts",
    "src/backoff.ts",
    "src/server_secret.ts",
    "src/storable_text.ts",
    "src/parsed.ts",
  ],
  [
    "src/db/",
    "src/net/",
    "src/ids.ts",
    "src/clock.ts",
    "src/log.ts",
    "src/hmac.ts",
    "src/text_bounds.ts",
    "src/html_to_text.ts",
    "src/code_points.ts",
    "src/service_info.ts",
    "src/bytes.ts",
    "src/promise_cache.ts",
    "src/metrics/",
  ],
];

/**
 * Imports back up allowed to close a folder loop. The loops of the review's table (section 1.1) are
 * all gone (issue 24): the list is empty and stays so; a loop is a design change, made here.
 */
export const ALLOWED_BACK_UP: [string, string][] = [];

/**
 * Folders with one face: files outside them import only this file (issue 24 item 3). A folder gets
 * a line here once it has its face; the task fails on an import past it.
 */
export const FACES: Record<string, string> = {
  "src/email/": "smtp_server.ts",
  "src/webhooks/": "mod.ts",
};

export const RULES: LayoutRules = { floors: FLOORS, allowed: ALLOWED_BACK_UP, faces: FACES };

/** Left out of the picture: the vendored driver (src/db/vendor/, upstream's code). */
const LEFT_OUT = ["src/db/vendor/"];
const TOP_FOLDERS = ["src", "events", "projections"];

/** The source files under the top folders, as paths from `root` (a directory URL). */
export async function sourceFiles(root: URL): Promise<string[]> {
  const files: string[] = [];
  const walk = async (dir: string) => {
    const entries: Deno.DirEntry[] = [];
    try {
      for await (const entry of Deno.readDir(new URL(dir, root))) entries.push(entry);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    for (const entry of entries) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory && !LEFT_OUT.includes(`${path}/`)) await walk(`${path}/`);
      if (entry.isFile && path.endsWith(".ts") && !path.endsWith(".d.ts")) files.push(path);
    }
  };
  for (const top of TOP_FOLDERS) await walk(`${top}/`);
  return files.sort();
}

/** Every import among `files` (and into the vendored driver), read from `deno info --json`. */
export async function importsOf(root: URL, files: string[]): Promise<FileImport[]> {
  // One entry module importing every file, so a single module graph holds them all.
  const entry = await Deno.makeTempFile({ prefix: "layout-", suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      entry,
      files.map((file) => `import ${JSON.stringify(new URL(file, root).href)};\n`).join(""),
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (code !== 0) throw new Error(`deno info failed: ${new TextDecoder().decode(stderr)}`);
    return importsInGraph(root, JSON.parse(new TextDecoder().decode(stdout)));
  } finally {
    await Deno.remove(entry);
  }
}

interface ModuleGraph {
  modules: {
    specifier: string;
    dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
  }[];
}

function importsInGraph(root: URL, graph: ModuleGraph): FileImport[] {
  const pathOf = (specifier: string | undefined) =>
    specifier?.startsWith(root.href) ? decodeURIComponent(specifier.slice(root.href.length)) : undefined;
  const imports: FileImport[] = [];
  for (const module of graph.modules) {
    const from = pathOf(module.specifier);
    if (!from || !roomOf(from)) continue;
    // A type-only import is a dependency too: its `type` side names the file.
    const targets = new Set(
      (module.dependencies ?? []).flatMap((
        dep,
      ) => [pathOf(dep.code?.specifier), pathOf(dep.type?.specifier)]),
    );
    for (const to of targets) if (to && to !== from && roomOf(to)) imports.push({ from, to });
  }
  return imports;
}

/** The picture as text, with the verdict last. */
export function report(layout: Layout): string {
  const lines: string[] = [];
  const floorOf = new Map(layout.rooms.map((room) => [room.name, room.floor]));
  const fileImports = layout.arrows.reduce((sum, arrow) => sum + arrow.imports.length, 0);
  const files = layout.rooms.reduce((sum, room) => sum + room.files, 0);
  lines.push(
    `${layout.rooms.length} rooms (folders one level under src/, each file directly in src/, events/, ` +
      `projections/), ${files} files, ${layout.arrows.length} arrows between rooms (${fileImports} file imports)`,
    "",
    "Floors, top first (declared in src/tasks/layout.ts; * placed above what it imports):",
  );
  const top = Math.max(...layout.rooms.map((room) => room.floor));
  for (let floor = top; floor >= 1; floor--) {
    const rooms = layout.rooms.filter((room) => room.floor === floor);
    if (rooms.length === 0) continue;
    const names = rooms.map((room) => `${room.name}${room.declared ? "" : "*"} (${room.files})`);
    lines.push(`  ${String(floor).padStart(2)}  ${names.join(", ")}`);
  }
  lines.push("", "Folder import graph (room -> room: file imports; ^ runs back up):");
  for (const room of layout.rooms) {
    const out = layout.arrows.filter((arrow) => arrow.from === room.name)
      .sort((a, b) => floorOf.get(b.to)! - floorOf.get(a.to)! || b.imports.length - a.imports.length);
    if (out.length === 0) continue;
    const targets = out.map((arrow) =>
      `${floorOf.get(arrow.to)! > room.floor ? "^" : ""}${arrow.to} ${arrow.imports.length}`
    );
    lines.push(`  ${room.name} -> ${targets.join(", ")}`);
  }
  const upImports = layout.backUp.reduce((sum, arrow) => sum + arrow.imports.length, 0);
  lines.push("", `Imports that run back up: ${layout.backUp.length} arrows, ${upImports} file imports`);
  for (const arrow of layout.backUp) {
    lines.push(
      `  ${arrow.from} (${floorOf.get(arrow.from)}) -> ${arrow.to} (${floorOf.get(arrow.to)}): ` +
        arrow.imports.map((edge) => `${edge.from} -> ${edge.to}`).join(", "),
    );
  }
  lines.push("", `Folder loops (strongly connected rooms): ${layout.loops.length}`);
  for (const loop of layout.loops) lines.push(`  ${loop.length} rooms: ${loop.join(", ")}`);
  lines.push(
    `  ${layout.twoWay.length} two-way pairs: ${layout.twoWay.map((pair) => pair.join(" <-> ")).join(", ")}`,
  );
  const folders = [...layout.entries].sort(([a], [b]) => (a < b ? -1 : 1));
  lines.push("", "Entry points (files imported from outside their folder: importing files):");
  for (const [room, entries] of folders) {
    const total = layout.rooms.find((r) => r.name === room)?.files ?? 0;
    const list = entries.map((entry) => `${entry.file.slice(room.length)} ${entry.importers}`);
    lines.push(`  ${room} ${entries.length} of ${total}${list.length ? `: ${list.join(", ")}` : ""}`);
  }
  if (layout.staleAllowed.length > 0) {
    lines.push("", "Allowed back-up imports that close no loop any more (remove them from ALLOWED_BACK_UP):");
    for (const [from, to] of layout.staleAllowed) lines.push(`  ${from} -> ${to}`);
  }
  if (layout.pastFaces.length > 0) {
    lines.push("", "Imports past a folder's face (src/tasks/layout.ts FACES): import the face instead");
    for (const edge of layout.pastFaces) lines.push(`  ${edge.from} -> ${edge.to}`);
  }
  lines.push("");
  if (layout.newLoopArrows.length === 0) {
    lines.push("OK: no new folder loop; every loop closes through an allowed import back up");
  } else {
    lines.push("New folder loop: these imports close a loop and are not in ALLOWED_BACK_UP:");
    for (const arrow of layout.newLoopArrows) {
      lines.push(`  ${arrow.from} -> ${arrow.to}: ${arrow.imports.map((edge) => edge.from).join(", ")}`);
    }
  }
  return lines.join("\n");
}

if (import.meta.main) {
  const root = Deno.args[0]
    ? pathToFileURL(`${await Deno.realPath(Deno.args[0])}/`)
    : new URL("../../", import.meta.url);
  const files = await sourceFiles(root);
  const layout = layoutOf(files, await importsOf(root, files), RULES);
  console.log(report(layout));
  if (layout.newLoopArrows.length > 0 || layout.pastFaces.length > 0) Deno.exit(1);
}
