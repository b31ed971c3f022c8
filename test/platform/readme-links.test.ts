/**
 * Every relative link of README.md, docs/**\/*.md and helm/psync/README.md resolves in
 * a fresh clone: its target file exists inside the repository, and a `#fragment` into
 * a Markdown file names one of its headings (GitHub's anchors) or an explicit
 * `<a id>`/`<a name>`. Links in code spans and fenced blocks are text, not links.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../support/process';

/** The Markdown files whose links are checked, relative to the repository root. */
function documents(): string[] {
  const docs: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) docs.push(path);
    }
  };
  walk('docs');
  return ['README.md', 'helm/psync/README.md', ...docs.sort()];
}

/** The text of a Markdown file without fenced code blocks and code spans. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[\s\S]*?\1/g, '');
}

/** Link targets: inline `[text](target "title")`, images, reference definitions `[id]: target`. */
function linksOf(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const references = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!);
  return [...inline, ...references];
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a Markdown file offers: its headings' (duplicates numbered -1, -2 …) and explicit ids. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  return anchors;
}

describe('documentation links resolve in a fresh clone', () => {
  test.each(documents())('%s', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const broken: string[] = [];
    for (const link of linksOf(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: …: not a file of the repository
      const [path, fragment] = link.split('#', 2) as [string, string | undefined];
      const target = path === '' ? join(ROOT, doc) : resolve(ROOT, dirname(doc), decodeURIComponent(path));
      const inside = relative(ROOT, target);
      if (inside.startsWith('..')) {
        broken.push(`${link}: outside the repository`);
        continue;
      }
      if (!existsSync(target)) {
        broken.push(`${link}: no such file ${inside}`);
        continue;
      }
      if (fragment && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(decodeURIComponent(fragment).toLowerCase())) {
        broken.push(`${link}: ${inside} has no heading for #${fragment}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('the checker sees links and anchors as GitHub does (and not inside code)', () => {
    const sample =
      '# Start here\n## Failed token exchanges (`429`)\n## Start here\n<a id="custom"></a>\n[a](x.md#y) `[b](not-a-link.md)`\n```\n[c](in-a-fence.md)\n```\n[d]: ref.md\n';
    expect(linksOf(sample)).toEqual(['x.md#y', 'ref.md']);
    expect([...anchorsOf(sample)]).toEqual(['start-here', 'failed-token-exchanges-429', 'start-here-1', 'custom']);
  });

  test('README.md cites the contract from docs/, with the date of the copy', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('](docs/partner-sync-api-v1.md)');
    expect(readme).not.toMatch(/\]\((\.\.\/)+shared\//);
    const copy = readFileSync(join(ROOT, 'docs/partner-sync-api-v1.md'), 'utf8');
    expect(copy.split('\n')[0]).toMatch(/^> A copy of the published contract `partner-sync-api-v1`, taken on \d{4}-\d{2}-\d{2}/);
  });
});
