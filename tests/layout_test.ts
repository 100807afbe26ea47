// deno task layout (src/tasks/layout.ts): on the repository it draws the folder picture and passes
// with today's loops allowed; on a small fixture it fails on a new folder loop and names the import
// that closes it, and an allowed one passes.

import assert from "node:assert/strict";
import { ALLOWED_BACK_UP, FLOORS, importsOf, report, sourceFiles } from "../src/tasks/layout.ts";
import { layoutOf } from "../src/tasks/layout_graph.ts";

const TASK = new URL("../src/tasks/layout.ts", import.meta.url);

async function runTask(root?: string): Promise<{ code: number; out: string }> {
  const { code, stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "--allow-run", TASK.pathname, ...(root ? [root] : [])],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return { code, out: new TextDecoder().decode(stdout) };
}

/** A fixture tree: each file imports the files it names. */
async function fixture(files: Record<string, string[]>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "layout-fixture-" });
  for (const [path, imports] of Object.entries(files)) {
    const dir = path.split("/").slice(0, -1).join("/");
    await Deno.mkdir(`${root}/${dir}`, { recursive: true });
    const depth = path.split("/").length - 1;
    const lines = imports.map((target) => `import "${"../".repeat(depth)}${target}";`);
    await Deno.writeTextFile(`${root}/${path}`, `${lines.join("\n")}\nexport {};\n`);
  }
  return root;
}

Deno.test("layout: the repository passes, with its picture and today's loops", async () => {
  const { code, out } = await runTask();
  assert.equal(code, 0, out);
  for (
    const heading of [
      "Floors, top first",
      "Folder import graph",
      "Imports that run back up",
      "Folder loops",
      "Entry points",
    ]
  ) {
    assert.match(out, new RegExp(`^${heading}`, "m"));
  }
  assert.match(out, /^OK: no new folder loop/m);
  // The email folder is the model face: one entry point; webhooks has one too.
  assert.match(out, /^ {2}src\/email\/ 1 of \d+: smtp_server\.ts 1$/m);
  assert.match(out, /^ {2}src\/webhooks\/ 1 of \d+: mod\.ts \d+$/m);
});

Deno.test("layout: each allowed import runs back up the declared floors; the driver is left out", async () => {
  const floorOf = new Map(FLOORS.flatMap((rooms, i) => rooms.map((room) => [room, FLOORS.length - i])));
  for (const [from, to] of ALLOWED_BACK_UP) {
    assert.ok(floorOf.get(from)! < floorOf.get(to)!, `${from} -> ${to} does not run back up`);
  }
  const files = await sourceFiles(new URL("../", import.meta.url));
  assert.ok(files.includes("src/main.ts"));
  assert.ok(!files.some((file) => file.startsWith("src/db/vendor/")), "the vendored driver is left out");
});

Deno.test("layout: a new folder loop fails the task and names the import that closes it", async () => {
  const root = await fixture({
    "src/main.ts": ["src/a/one.ts"],
    "src/a/one.ts": ["src/b/two.ts", "src/leaf.ts"],
    "src/b/two.ts": ["src/a/one.ts"],
    "src/leaf.ts": [],
    "events/store.ts": ["src/leaf.ts"],
  });
  try {
    const { code, out } = await runTask(root);
    assert.equal(code, 1, out);
    assert.match(out, /^ {2}2 rooms: src\/a\/, src\/b\/$/m);
    assert.match(out, /^New folder loop: /m);
    assert.match(out, /^ {2}src\/(a|b)\/ -> src\/(a|b)\/: /m);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("layout: a loop through an allowed import back up passes; a loop within one floor does not", async () => {
  const root = await fixture({
    "src/a/one.ts": ["src/b/two.ts"],
    "src/b/two.ts": ["src/a/one.ts"],
  });
  const rootUrl = new URL(`file://${root}/`);
  try {
    const files = await sourceFiles(rootUrl);
    const imports = await importsOf(rootUrl, files);
    const allowed = layoutOf(files, imports, {
      floors: [["src/a/"], ["src/b/"]],
      allowed: [["src/b/", "src/a/"]],
    });
    assert.deepEqual(allowed.loops, [["src/a/", "src/b/"]]);
    assert.deepEqual(allowed.backUp.map((arrow) => [arrow.from, arrow.to]), [["src/b/", "src/a/"]]);
    assert.deepEqual(allowed.newLoopArrows, []);
    assert.match(report(allowed), /^OK: /m);

    const level = layoutOf(files, imports, { floors: [["src/a/", "src/b/"]], allowed: [] });
    assert.deepEqual(level.newLoopArrows.map((arrow) => arrow.from).sort(), ["src/a/", "src/b/"]);

    const notAllowed = layoutOf(files, imports, { floors: [["src/a/"], ["src/b/"]], allowed: [] });
    assert.deepEqual(notAllowed.newLoopArrows.map((arrow) => [arrow.from, arrow.to]), [["src/b/", "src/a/"]]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("layout: an import past a folder's face fails the task and names it; the face itself passes", async () => {
  const root = await fixture({
    "src/main.ts": ["src/hooks/mod.ts", "src/hooks/inner.ts"],
    "src/hooks/mod.ts": ["src/hooks/inner.ts"],
    "src/hooks/inner.ts": [],
    "src/other/uses.ts": ["src/hooks/mod.ts"],
  });
  const rootUrl = new URL(`file://${root}/`);
  try {
    const files = await sourceFiles(rootUrl);
    const imports = await importsOf(rootUrl, files);
    const rules = { floors: [], allowed: [], faces: { "src/hooks/": "mod.ts" } };
    const layout = layoutOf(files, imports, rules);
    assert.deepEqual(layout.pastFaces, [{ from: "src/main.ts", to: "src/hooks/inner.ts" }]);
    assert.match(
      report(layout),
      /^Imports past a folder's face[^\n]*\n {2}src\/main\.ts -> src\/hooks\/inner\.ts$/m,
    );
    const faceOnly = layoutOf(
      files,
      imports.filter((edge) => edge.to !== "src/hooks/inner.ts" || edge.from !== "src/main.ts"),
      rules,
    );
    assert.deepEqual(faceOnly.pastFaces, []);
    assert.doesNotMatch(report(faceOnly), /past a folder's face/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
