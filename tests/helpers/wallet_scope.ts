// A static check that no SQL statement joins two wallets' rows: every statement in the code's
// tagged templates (and `.unsafe` calls) that reads or changes a wallet table must pin each such
// table's rows to one wallet, by `wallet_id = ${...}`, `= any(${...})` or a batch's key list
// (unnest / jsonb_to_recordset, one wallet per key row), and tie every wallet table it names to the
// same `wallet_id`. Inserts are checked on what they select, not on their target (each inserted
// row carries its own wallet_id). What cannot hold (sweeps, audit, replay, lookups by a global key)
// is allow-listed by the caller with a reason.
import ts from "typescript";

export interface Statement {
  file: string;
  line: number;
  /**
   * Lower-cased SQL, each `${...}` as `$pN` (the same expression, the same N); "<dynamic>" when the
   * text is built at run time.
   */
  text: string;
}

/** Tagged templates and `.unsafe(...)` texts of one source file. */
export function statementsOf(file: string, source: string): Statement[] {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: Statement[] = [];
  const add = (node: ts.Node, text: string) =>
    found.push({ file, line: tree.getLineAndCharacterOfPosition(node.getStart()).line + 1, text });
  const visit = (node: ts.Node) => {
    if (ts.isTaggedTemplateExpression(node) && node.tag.getText(tree) !== "String.raw") {
      add(node, render(node.template));
    } else if (
      ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === "unsafe" && node.arguments.length > 0
    ) {
      const first = node.arguments[0];
      add(node, ts.isStringLiteral(first) || ts.isTemplateLiteral(first) ? render(first) : "<dynamic>");
    }
    ts.forEachChild(node, visit);
  };
  visit(tree);
  return found;
}

function render(literal: ts.TemplateLiteral | ts.StringLiteral): string {
  const values: string[] = [];
  const value = (expression: ts.Expression) => {
    const text = expression.getText().replace(/\s+/g, "");
    if (!values.includes(text)) values.push(text);
    return `$p${values.indexOf(text)}`;
  };
  const text = ts.isStringLiteral(literal) || ts.isNoSubstitutionTemplateLiteral(literal)
    ? literal.text
    : literal.head.text +
      literal.templateSpans.map((span) => value(span.expression) + span.literal.text).join("");
  return text.replace(/--[^\n]*/g, " ").replace(/\s+/g, " ").trim().toLowerCase();
}

/** Vendored code (the database driver), whose statements are not the service's. */
const VENDORED = "src/db/vendor";

/** Every statement under `roots` (directories, relative to `base`), vendored code left out. */
export async function statementsUnder(base: string, roots: string[]): Promise<Statement[]> {
  const all: Statement[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(`${base}/${dir}`)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory && path !== VENDORED) await walk(path);
      else if (entry.isFile && path.endsWith(".ts")) {
        all.push(...statementsOf(path, await Deno.readTextFile(`${base}/${path}`)));
      }
    }
  };
  for (const root of roots) await walk(root);
  return all;
}

const KEYWORDS = new Set(
  ("where on set join left right inner outer cross full natural lateral order group limit returning " +
    "select values using for with as union except intersect having offset window into from and or not")
    .split(" "),
);
// The alias, when there is one, is not a keyword (else `, col from t` would swallow the FROM).
const REFERENCE = new RegExp(
  String.raw`(\bfrom|\bjoin|\binto|\bupdate|\busing|,)\s*(?:only\s+)?"?([a-z_][a-z0-9_]*)"?` +
    String.raw`(?:\s+(?:as\s+)?(?!(?:${[...KEYWORDS].join("|")})\b)([a-z_][a-z0-9_]*))?`,
  "g",
);
const KEY_SET =
  /\b(?:unnest|jsonb_to_recordset)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:with ordinality\s*)?as\s+([a-z_][a-z0-9_]*)/g;
const OPERAND = String
  .raw`(any\s*\(\s*\$p?\d+[^)]*\)|\$p?\d+(?:::[a-z_\[\]]+)?|(?:[a-z_][a-z0-9_]*\.)?"?[a-z_][a-z0-9_]*"?)`;
const EQUALITY = new RegExp(`${OPERAND}\\s*=\\s*${OPERAND}`, "g");

interface TableRef {
  table: string;
  alias: string;
  target: boolean;
  at: number;
}

function referencesOf(text: string, walletTables: ReadonlySet<string>): TableRef[] {
  const refs: TableRef[] = [];
  for (const m of text.matchAll(REFERENCE)) {
    if (!walletTables.has(m[2])) continue;
    const alias = m[3] ?? m[2];
    const target = m[1].endsWith("into") && /^\s*(with\b.*\)\s*)?insert\b/.test(text.slice(0, m.index! + 4));
    refs.push({ table: m[2], alias, target, at: m.index! });
  }
  return refs;
}

/** Why `text` may join two wallets' rows, or undefined when every wallet table in it is pinned to one. */
export function walletScopeProblem(text: string, walletTables: ReadonlySet<string>): string | undefined {
  if (text === "<dynamic>") return "SQL built at run time cannot be checked";
  const all = referencesOf(text, walletTables);
  const refs = all.filter((r) => !r.target);
  if (refs.length === 0) return undefined;
  const aliases = new Set(refs.map((r) => r.alias));
  const keySets = new Set([...text.matchAll(KEY_SET)].map((m) => m[1]));
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    const p = parent.get(x) ?? x;
    if (p === x) return x;
    const root = find(p);
    parent.set(x, root);
    return root;
  };
  const union = (a: string, b: string) => parent.set(find(a), find(b));
  // A parameter or a batch's key column pins rows to the wallet it holds; a bare wallet_id belongs to
  // the nearest wallet table before it (the FROM it filters).
  const pinNodes = new Set<string>();
  const pin = (name: string) => (pinNodes.add(name), name);
  const node = (operand: string, at: number): string | undefined => {
    const parameter = operand.match(/\$p?\d+/)?.[0];
    if (parameter) return pin(`<${parameter}>`);
    const [owner, column] = operand.includes(".") ? operand.split(".") : [undefined, operand];
    if (owner && keySets.has(owner)) return pin(`<${operand}>`);
    if (column.replaceAll('"', "") !== "wallet_id") return owner ? operand : undefined;
    if (owner) return aliases.has(owner) ? owner : operand;
    return all.findLast((r) => r.at < at)?.alias ?? "<ambiguous>";
  };
  for (const m of text.matchAll(EQUALITY)) {
    const [left, right] = [m[1], m[2]];
    if (!/wallet_id/.test(left) && !/wallet_id/.test(right)) continue;
    const [a, b] = [node(left, m.index!), node(right, m.index!)];
    if (a === "<ambiguous>" || b === "<ambiguous>") return "a wallet_id that belongs to no wallet table";
    if (a && b) union(a, b);
  }
  // One wallet per result row: every wallet table tied to the others and to one pin by wallet_id.
  const components = new Set(refs.map((r) => find(r.alias)));
  if (components.size > 1) {
    return `${refs.map((r) => r.table).join(", ")} not tied to one another by wallet_id`;
  }
  const component = [...components][0];
  const pins = [...pinNodes].filter((k) => find(k) === component);
  if (pins.length === 0) {
    return `${refs.map((r) => r.table).join(", ")} not pinned to one wallet by wallet_id`;
  }
  return undefined;
}

export interface AllowedStatement {
  /** The file, or a folder ending in "/". */
  file: string;
  /** A piece of the statement's text (lower case, `${...}` as `$p`); any statement of the file without it. */
  contains?: string;
  reason: string;
}

export interface Finding {
  statement: Statement;
  problem: string;
}

/** Statements with a problem that no allow-list entry covers, and the entries that cover nothing. */
export function checkStatements(
  statements: Statement[],
  walletTables: ReadonlySet<string>,
  allowed: readonly AllowedStatement[],
): { findings: Finding[]; unused: AllowedStatement[] } {
  const used = new Set<AllowedStatement>();
  const findings: Finding[] = [];
  for (const statement of statements) {
    const problem = walletScopeProblem(statement.text, walletTables);
    if (!problem) continue;
    const entry = allowed.find((a) =>
      (a.file.endsWith("/") ? statement.file.startsWith(a.file) : statement.file === a.file) &&
      (a.contains === undefined || statement.text.includes(a.contains))
    );
    if (entry) used.add(entry);
    else findings.push({ statement, problem });
  }
  return { findings, unused: allowed.filter((a) => !used.has(a)) };
}
