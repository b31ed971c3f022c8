/**
 * The house's shape (docs/architecture.md "The dependency rule"), checked on the import
 * graph of the production code (main.ts, services/, gateway/, bin/cli/; tests aside):
 *  - no import circle: every strongly connected component is one file;
 *  - main.ts, the composition root, is imported by nothing: the one place that knows
 *    both the services and the gateway stands above them;
 *  - a module (a folder of services/kit/, and services/domain/) is reached from outside
 *    only through its index.ts (docs/architecture.md "Modules").
 * Imports are read with TypeScript's own pre-processor (ts.preProcessFile: import,
 * export … from, import() with a literal); only the repository's relative imports count.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../support/process';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'migrations' ? [] : sources(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(dirname(from), spec);
  return [`${base}.ts`, join(base, 'index.ts')].find((p) => existsSync(p));
}

const files = [join(ROOT, 'main.ts'), ...['services', 'gateway', join('bin', 'cli')].flatMap((d) => sources(join(ROOT, d)))];
const graph = new Map<string, string[]>(
  files.map((f) => [
    f,
    ts
      .preProcessFile(readFileSync(f, 'utf8'), true, true)
      .importedFiles.map((i) => resolveImport(f, i.fileName))
      .filter((p): p is string => p !== undefined),
  ]),
);

/** Tarjan's strongly connected components with more than one file (or a file importing itself). */
function circles(): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.map((p) => relative(ROOT, p)).sort());
    }
  };
  for (const f of graph.keys()) if (!idx.has(f)) visit(f);
  return out;
}

describe('the import graph of the production code', () => {
  test('reads the whole house', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect([...graph.values()].flat().length).toBeGreaterThan(500);
  });

  test('has no circle', () => {
    expect(circles()).toEqual([]);
  });

  test('a module is reached from outside only through its index.ts', () => {
    const modules = [...readdirSync(join(ROOT, 'services', 'kit')).map((d) => join(ROOT, 'services', 'kit', d)), join(ROOT, 'services', 'domain')].filter((d) =>
      existsSync(join(d, 'index.ts')),
    );
    expect(modules.length).toBeGreaterThanOrEqual(9);
    const moduleOf = (f: string) => modules.find((m) => f.startsWith(`${m}/`));
    const past = [...graph.entries()].flatMap(([from, deps]) =>
      deps
        .filter((to) => {
          const m = moduleOf(to);
          return m !== undefined && moduleOf(from) !== m && to !== join(m, 'index.ts');
        })
        .map((to) => `${relative(ROOT, from)} → ${relative(ROOT, to)}`),
    );
    expect(past).toEqual([]);
  });

  test('nothing imports the composition root, main.ts', () => {
    const root = join(ROOT, 'main.ts');
    expect([...graph.entries()].filter(([, deps]) => deps.includes(root)).map(([f]) => relative(ROOT, f))).toEqual([]);
  });
});
