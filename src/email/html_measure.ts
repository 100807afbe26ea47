// Measures HTML the way htmlparser2 (under html-to-text) would nest it, without building it: the
// deepest nesting, the number of elements and the text the markup alone makes (line breaks, rules,
// quote and list prefixes). Linear, fed in chunks of bytes, and it stops at the first bound passed.
// Pure. htmlparser2 keeps its open elements in an array it shifts for each one, so deep nesting costs
// it quadratic time: 200,000 nested <div> kept a parser busy past 10 s.

export interface HtmlBounds {
  /** Elements open at once, as the parser nests them. */
  maxNesting: number;
  maxElements: number;
  /** Characters of text the markup alone makes (an estimate from html-to-text's formats). */
  maxMarkupChars: number;
}

function names(list: string): Set<string> {
  return new Set(list.split(" "));
}

/** Elements that never hold content (htmlparser2's list). */
const VOID = names(
  "area base basefont br col command embed frame hr img input isindex keygen link meta param source track wbr",
);

/** Whose text is read raw up to their end tag: tags inside them are text. */
const RAW_TEXT = names("script style title textarea xmp");

/** Elements that can hold self-closed children (`<g/>` closes itself only in these). */
const FOREIGN = names("svg math");

const P = names("p");
const FORM = names("input option optgroup select button datalist textarea");
/** htmlparser2's openImpliesClose: opening the key closes open elements of its set on top. */
const IMPLIES_CLOSE = new Map<string, Set<string>>([
  ["tr", names("tr th td")],
  ["th", names("th")],
  ["td", names("thead th td")],
  ["body", names("head link script")],
  ["li", names("li")],
  ["select", FORM],
  ["input", FORM],
  ["output", FORM],
  ["button", FORM],
  ["datalist", FORM],
  ["textarea", FORM],
  ["option", names("option")],
  ["optgroup", names("optgroup option")],
  ["dd", names("dd dt")],
  ["dt", names("dd dt")],
  ["rt", names("rt rp")],
  ["rp", names("rt rp")],
  ["tbody", names("thead tbody")],
  ["tfoot", names("thead tbody")],
  ...[...names(
    "p h1 h2 h3 h4 h5 h6 address article aside blockquote details div dl fieldset figcaption figure footer " +
      "form header hr main nav ol pre section table ul",
  )].map((name): [string, Set<string>] => [name, P]),
]);

/** Elements html-to-text sets on lines of their own: a line break before and after. */
const BLOCKS = names(
  "p div h1 h2 h3 h4 h5 h6 blockquote pre ul ol dl dt dd table tr address article aside details summary " +
    "fieldset figure figcaption footer form header main nav section",
);

/** html-to-text's default horizontal rule: 40 dashes on a line of their own. */
const RULE_CHARS = 42;
/** A list item's marker (" * ", "12. ") and its line break. */
const LIST_ITEM_CHARS = 5;
/** Each enclosing quote prefixes every line with "> ", each enclosing list indents it. */
const PREFIX_PER_LEVEL = 3;
/** Longest tag name kept: longer ones name no element the rules above know. */
const MAX_NAME_CHARS = 20;

const enum State {
  Text,
  TagOpen,
  StartName,
  EndOpen,
  EndName,
  EndRest,
  BeforeAttribute,
  AttributeName,
  AfterAttributeName,
  BeforeValue,
  DoubleQuoted,
  SingleQuoted,
  Unquoted,
  SelfClosing,
  DeclarationStart,
  DeclarationDash,
  Comment,
  Declaration,
  RawText,
}

const indexOfByte = Uint8Array.prototype.indexOf;
const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const QUESTION = 0x3f;
const DASH = 0x2d;
const EQUALS = 0x3d;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const NEWLINE = 0x0a;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
}

function isAlpha(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
}

function lower(c: number): string {
  return String.fromCharCode(c >= 0x41 && c <= 0x5a ? c + 0x20 : c);
}

/** The measure of one HTML document, fed in chunks; `refusal` says which bound it passed, if any. */
export class HtmlMeasure {
  readonly #bounds: HtmlBounds;
  #state = State.Text;
  #name = "";
  /** The element whose raw text is being read, and how much of "</name" has matched. */
  #rawEnd = "";
  #rawMatched = 0;
  /** Two characters before the current one, for "-->". */
  #dashes = 0;
  readonly #open: string[] = [];
  #quotes = 0;
  #lists = 0;
  #preformatted = 0;
  #foreign = 0;
  elements = 0;
  deepest = 0;
  markupChars = 0;
  #refusal: string | undefined;

  constructor(bounds: HtmlBounds) {
    this.#bounds = bounds;
  }

  /** The bound the document passed, worded for the sender, or undefined while it is within them. */
  get refusal(): string | undefined {
    return this.#refusal;
  }

  /** Reads more of the document; once a bound is passed the rest is not read. */
  write(bytes: Uint8Array): void {
    let i = 0;
    while (i < bytes.length && this.#refusal === undefined) {
      if (this.#state === State.Text && this.#preformatted === 0) {
        // Plain text matters only where it ends: the native search skips to the next "<".
        i = indexOfByte.call(bytes, LT, i);
        if (i === -1) return;
      }
      this.#step(bytes[i++]);
    }
  }

  #step(c: number): void {
    switch (this.#state) {
      case State.Text:
        if (c === LT) this.#state = State.TagOpen;
        else if (c === NEWLINE && this.#preformatted > 0) this.#addMarkup(this.#prefix());
        return;
      case State.TagOpen:
        if (isAlpha(c)) {
          this.#name = lower(c);
          this.#state = State.StartName;
        } else if (c === SLASH) this.#state = State.EndOpen;
        else if (c === BANG) this.#state = State.DeclarationStart;
        else if (c === QUESTION) this.#state = State.Declaration;
        else if (c !== LT) this.#state = State.Text;
        return;
      case State.StartName:
        if (isSpace(c)) this.#state = State.BeforeAttribute;
        else if (c === SLASH) this.#state = State.SelfClosing;
        else if (c === GT) this.#openElement(false);
        else if (this.#name.length < MAX_NAME_CHARS) this.#name += lower(c);
        return;
      case State.BeforeAttribute:
        if (c === GT) this.#openElement(false);
        else if (c === SLASH) this.#state = State.SelfClosing;
        else if (!isSpace(c)) this.#state = State.AttributeName;
        return;
      case State.AttributeName:
        if (c === EQUALS) this.#state = State.BeforeValue;
        else if (isSpace(c)) this.#state = State.AfterAttributeName;
        else if (c === SLASH) this.#state = State.SelfClosing;
        else if (c === GT) this.#openElement(false);
        return;
      case State.AfterAttributeName:
        if (c === EQUALS) this.#state = State.BeforeValue;
        else if (c === GT) this.#openElement(false);
        else if (c === SLASH) this.#state = State.SelfClosing;
        else if (!isSpace(c)) this.#state = State.AttributeName;
        return;
      case State.BeforeValue:
        if (c === DQUOTE) this.#state = State.DoubleQuoted;
        else if (c === SQUOTE) this.#state = State.SingleQuoted;
        else if (c === GT) this.#openElement(false);
        else if (!isSpace(c)) this.#state = State.Unquoted;
        return;
      case State.DoubleQuoted:
        if (c === DQUOTE) this.#state = State.BeforeAttribute;
        return;
      case State.SingleQuoted:
        if (c === SQUOTE) this.#state = State.BeforeAttribute;
        return;
      case State.Unquoted:
        if (isSpace(c)) this.#state = State.BeforeAttribute;
        else if (c === GT) this.#openElement(false);
        return;
      case State.SelfClosing:
        if (c === GT) this.#openElement(true);
        else if (!isSpace(c)) {
          this.#state = State.BeforeAttribute;
          this.#step(c);
        }
        return;
      case State.EndOpen:
        if (isAlpha(c)) {
          this.#name = lower(c);
          this.#state = State.EndName;
        } else this.#state = c === GT ? State.Text : State.Declaration;
        return;
      case State.EndName:
        if (c === GT) this.#closeElement();
        else if (isSpace(c) || c === SLASH) this.#state = State.EndRest;
        else if (this.#name.length < MAX_NAME_CHARS) this.#name += lower(c);
        return;
      case State.EndRest:
        if (c === GT) this.#closeElement();
        return;
      case State.DeclarationStart:
        this.#state = c === DASH ? State.DeclarationDash : c === GT ? State.Text : State.Declaration;
        return;
      case State.DeclarationDash:
        this.#dashes = 0;
        this.#state = c === DASH ? State.Comment : c === GT ? State.Text : State.Declaration;
        return;
      case State.Comment:
        if (c === GT && this.#dashes >= 2) this.#state = State.Text;
        this.#dashes = c === DASH ? this.#dashes + 1 : 0;
        return;
      case State.Declaration:
        if (c === GT) this.#state = State.Text;
        return;
      case State.RawText:
        this.#readRaw(c);
        return;
    }
  }

  /** Inside script, style and the like: only "</name" followed by a space, "/" or ">" ends it. */
  #readRaw(c: number): void {
    const end = this.#rawEnd;
    const matched = this.#rawMatched;
    if (matched === end.length + 2) {
      if (isSpace(c) || c === SLASH || c === GT) {
        this.#name = end;
        this.#state = State.EndRest;
        if (c === GT) this.#closeElement();
        return;
      }
      this.#rawMatched = 0;
    }
    const expected = this.#rawMatched === 0 ? "<" : this.#rawMatched === 1 ? "/" : end[this.#rawMatched - 2];
    if (lower(c) === expected) this.#rawMatched++;
    else this.#rawMatched = c === LT ? 1 : 0;
  }

  #openElement(selfClosing: boolean): void {
    const name = this.#name;
    this.#state = State.Text;
    if (++this.elements > this.#bounds.maxElements) {
      this.#refusal = `Too many HTML elements: more than ${this.#bounds.maxElements}`;
      return;
    }
    const closes = IMPLIES_CLOSE.get(name);
    if (closes) { while (this.#open.length > 0 && closes.has(this.#open.at(-1)!)) this.#pop(); }
    this.#addMarkup(this.#markupOf(name));
    if (VOID.has(name) || (selfClosing && this.#foreign > 0)) return;
    this.#push(name);
    if (RAW_TEXT.has(name)) {
      this.#rawEnd = name;
      this.#rawMatched = 0;
      this.#state = State.RawText;
    }
  }

  #closeElement(): void {
    const name = this.#name;
    this.#state = State.Text;
    if (VOID.has(name)) {
      // "</br>" is a line break of its own; other void end tags are ignored.
      if (name === "br") this.#countImplied(name);
      return;
    }
    const at = this.#open.lastIndexOf(name);
    if (at !== -1) { while (this.#open.length > at) this.#pop(); }
    else if (name === "p") this.#countImplied(name);
  }

  /** An element the parser makes from an end tag alone. */
  #countImplied(name: string): void {
    if (++this.elements > this.#bounds.maxElements) {
      this.#refusal = `Too many HTML elements: more than ${this.#bounds.maxElements}`;
      return;
    }
    this.#addMarkup(this.#markupOf(name));
  }

  #push(name: string): void {
    this.#open.push(name);
    if (name === "blockquote") this.#quotes++;
    else if (name === "ul" || name === "ol") this.#lists++;
    else if (name === "pre") this.#preformatted++;
    else if (FOREIGN.has(name)) this.#foreign++;
    if (this.#open.length > this.deepest) this.deepest = this.#open.length;
    if (this.#open.length > this.#bounds.maxNesting) {
      this.#refusal = `HTML nested too deeply: more than ${this.#bounds.maxNesting} open elements`;
    }
  }

  #pop(): void {
    const name = this.#open.pop();
    if (name === "blockquote") this.#quotes--;
    else if (name === "ul" || name === "ol") this.#lists--;
    else if (name === "pre") this.#preformatted--;
    else if (name !== undefined && FOREIGN.has(name)) this.#foreign--;
  }

  #prefix(): number {
    return PREFIX_PER_LEVEL * (this.#quotes + this.#lists);
  }

  /** The text html-to-text writes for the element's markup, besides the text it holds. */
  #markupOf(name: string): number {
    if (name === "br") return 1 + this.#prefix();
    if (name === "hr") return RULE_CHARS + this.#prefix();
    if (name === "li") return LIST_ITEM_CHARS + this.#prefix();
    if (BLOCKS.has(name)) return 2 + this.#prefix();
    return 0;
  }

  #addMarkup(chars: number): void {
    this.markupChars += chars;
    if (this.markupChars > this.#bounds.maxMarkupChars && this.#refusal === undefined) {
      this.#refusal =
        `HTML expands too much: its markup alone makes more than ${this.#bounds.maxMarkupChars} characters of text`;
    }
  }
}

/** Measures a whole document at once. */
export function measureHtml(html: Uint8Array | string, bounds: HtmlBounds): HtmlMeasure {
  const measure = new HtmlMeasure(bounds);
  measure.write(typeof html === "string" ? new TextEncoder().encode(html) : html);
  return measure;
}
