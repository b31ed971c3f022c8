/**
 * Fenced code blocks of a Markdown document and the annotation before each: an HTML
 * comment on the closest non-empty line above the fence, `<!-- kind: attributes -->`,
 * invisible on GitHub. Attributes are `key=value`, `key="quoted value"` or a bare
 * `flag` (value `true`); the first bare word is also the block's `name`, so
 * `<!-- example: token -->` names the example `token`.
 */

export interface AnnotatedBlock {
  /** The comment's kind (`quickstart`, `example`, `response`, …); '' when the block has none. */
  kind: string;
  /** The first bare word of the annotation ('' if none). */
  name: string;
  attributes: Record<string, string>;
  /** The fence's info string (`sh`, `json`, `http`, …). */
  lang: string;
  /** The block's text, without the fences, ending with a newline. */
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
}

const ANNOTATION = /^<!--\s*([a-z][a-z-]*):\s*(.*?)\s*-->$/;

/** Parses `key=value key="a b" flag` (double quotes only, no escapes). */
export function parseAttributes(text: string): { name: string; attributes: Record<string, string> } {
  const attributes: Record<string, string> = {};
  let name = '';
  for (const m of text.matchAll(/([a-zA-Z_][\w.-]*)(?:=(?:"([^"]*)"|(\S+)))?/g)) {
    const value = m[2] ?? m[3];
    if (value === undefined) {
      attributes[m[1]!] = 'true';
      if (name === '') name = m[1]!;
    } else attributes[m[1]!] = value;
  }
  return { name, attributes };
}

/** Every fenced block of `markdown`, in order, with its annotation. */
export function fencedBlocks(markdown: string): AnnotatedBlock[] {
  const lines = markdown.split('\n');
  const blocks: AnnotatedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(```+|~~~+)\s*([\w-]*)/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith(fence); i++) body.push(lines[i]!);
    let above = start - 1;
    while (above >= 0 && lines[above]!.trim() === '') above--;
    const annotation = above >= 0 ? ANNOTATION.exec(lines[above]!.trim()) : null;
    const { name, attributes } = annotation ? parseAttributes(annotation[2]!) : { name: '', attributes: {} };
    blocks.push({ kind: annotation?.[1] ?? '', name, attributes, lang: open[2] ?? '', code: `${body.join('\n')}\n`, line: start + 1 });
  }
  return blocks;
}

/** The text of the section under the heading `heading` (any level), up to the next heading of that level or higher. */
export function section(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const at = lines.findIndex((l) => /^#{1,6}\s/.test(l) && l.replace(/^#+\s+/, '').trim() === heading);
  if (at < 0) throw new Error(`no heading "${heading}"`);
  const level = /^#+/.exec(lines[at]!)![0].length;
  let end = at + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    if (/^(```|~~~)/.test(lines[end]!)) fenced = !fenced;
    const h = /^(#+)\s/.exec(lines[end]!);
    if (!fenced && h && h[1]!.length <= level) break;
  }
  // Blank lines keep the line numbers of the whole document.
  return [...lines.slice(0, at).map(() => ''), ...lines.slice(at, end)].join('\n');
}
