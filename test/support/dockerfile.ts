/**
 * deploy/Dockerfile and .dockerignore as data, for the tests that check the image
 * without a Docker engine (none runs on these machines): the static checks
 * (test/helm/dockerfile.test.ts) and the build-and-run emulation
 * (test/helm/image-build.test.ts). One parser for both.
 *
 * It understands what this repository's Dockerfile uses: `\` continuations, comments,
 * stages (`FROM … AS name`), flags (`--from=`, `--mount=`), exec-form JSON arrays,
 * `ENV` with `$VAR`/`${VAR}` expansion, and .dockerignore patterns with `*`, `?`,
 * `**`, `[…]` and `!` exceptions (matched as Docker does: from the context root, a
 * pattern that matches a directory excludes everything below it).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './process';

export const DOCKERFILE = join(ROOT, 'deploy', 'Dockerfile');
export const DOCKERIGNORE = join(ROOT, '.dockerignore');

export interface Instruction {
  keyword: string;
  args: string;
  /** Comment lines directly above the instruction. */
  comment: string;
  line: number;
}

/** Splits a Dockerfile into instructions, joining `\` continuations and keeping the comments above each. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  let comment: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const trimmed = raw.trim();
    if (trimmed === '') {
      comment = [];
      continue;
    }
    if (trimmed.startsWith('#')) {
      comment.push(trimmed.replace(/^#\s?/, ''));
      continue;
    }
    const start = i + 1;
    let body = trimmed;
    while (body.endsWith('\\') && i + 1 < lines.length) {
      body = `${body.slice(0, -1)} ${lines[++i]!.trim()}`;
    }
    const m = /^(\S+)\s*(.*)$/.exec(body)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), comment: comment.join('\n'), line: start });
    comment = [];
  }
  return out;
}

export interface Stage {
  /** The `AS` name ('' when none). */
  name: string;
  /** What FROM names: an image (ARGs substituted) or an earlier stage. */
  base: string;
  /** The FROM instruction first, then every instruction up to the next FROM. */
  instructions: Instruction[];
}

export interface Dockerfile {
  text: string;
  instructions: Instruction[];
  stages: Stage[];
  /** The last stage: what `docker build` without --target produces. */
  runtime: Stage;
  /** The named stage; throws when there is none. */
  stage(name: string): Stage;
  /**
   * The instructions a stage runs, its parent stages' first (`FROM deps AS build`:
   * deps, then build); each stage's FROM included.
   */
  chain(name: string): Instruction[];
}

/** Reads and parses a Dockerfile (default: deploy/Dockerfile). */
export function readDockerfile(path = DOCKERFILE): Dockerfile {
  const text = readFileSync(path, 'utf8');
  const instructions = parseDockerfile(text);
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'ARG' && stages.length === 0) {
      const eq = ins.args.indexOf('=');
      if (eq < 0) args.set(ins.args, '');
      else args.set(ins.args.slice(0, eq), ins.args.slice(eq + 1));
    }
    if (ins.keyword === 'FROM') {
      const { rest } = splitFlags(ins.args);
      const [image = '', as, name = ''] = rest.split(/\s+/);
      const base = image.replace(/\$\{(\w+)\}|\$(\w+)/g, (m, a?: string, b?: string) => args.get((a ?? b)!) ?? m);
      stages.push({ name: /^as$/i.test(as ?? '') ? name : '', base, instructions: [] });
    }
    stages[stages.length - 1]?.instructions.push(ins);
  }
  const stage = (name: string) => {
    const s = stages.find((x) => x.name === name);
    if (!s) throw new Error(`${path}: no stage named ${name}`);
    return s;
  };
  const chain = (name: string): Instruction[] => {
    const s = stage(name);
    const parent = stages.find((x) => x.name === s.base && x !== s);
    return [...(parent ? chain(parent.name) : []), ...s.instructions];
  };
  return { text, instructions, stages, runtime: stages[stages.length - 1]!, stage, chain };
}

/** Splits the leading `--name=value` flags off an instruction's arguments. */
export function splitFlags(args: string): { flags: Map<string, string[]>; rest: string } {
  const flags = new Map<string, string[]>();
  let rest = args.trim();
  for (let m = /^--([\w-]+)(?:=(\S*))?\s*/.exec(rest); m; m = /^--([\w-]+)(?:=(\S*))?\s*/.exec(rest)) {
    flags.set(m[1]!, [...(flags.get(m[1]!) ?? []), m[2] ?? '']);
    rest = rest.slice(m[0].length);
  }
  return { flags, rest };
}

/** An exec-form argument list (`["node", "dist/main.js"]`); throws on the shell form. */
export function execForm(args: string): string[] {
  const v = JSON.parse(args) as unknown;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`not an exec-form array: ${args}`);
  return v;
}

export interface Copy {
  /** `--from=<stage>`, if any. */
  from?: string;
  flags: Map<string, string[]>;
  sources: string[];
  dest: string;
}

/** COPY's sources and destination (shell or JSON form). */
export function parseCopy(args: string): Copy {
  const { flags, rest } = splitFlags(args);
  const words = rest.startsWith('[') ? execForm(rest) : rest.split(/\s+/);
  if (words.length < 2) throw new Error(`COPY needs a source and a destination: ${args}`);
  return { from: flags.get('from')?.[0], flags, sources: words.slice(0, -1), dest: words[words.length - 1]! };
}

/**
 * Applies one ENV instruction to `before` and returns the new environment. Values
 * may be quoted; `$VAR` and `${VAR}` expand (not inside single quotes) to the values
 * from BEFORE this instruction, as Docker does.
 */
export function applyEnv(args: string, before: Record<string, string>): Record<string, string> {
  const after = { ...before };
  const words = shellWords(args, before);
  if (words.length > 0 && !words[0]!.includes('=')) {
    // Legacy form: ENV KEY value with spaces
    const m = /^(\S+)\s+(.*)$/.exec(args.trim());
    if (!m) throw new Error(`ENV without a value: ${args}`);
    after[m[1]!] = shellWords(m[2]!, before).join(' ');
    return after;
  }
  for (const w of words) {
    const eq = w.indexOf('=');
    if (eq <= 0) throw new Error(`ENV: expected KEY=value, got ${JSON.stringify(w)} in ${args}`);
    after[w.slice(0, eq)] = w.slice(eq + 1);
  }
  return after;
}

/** Splits on unquoted white space, removing quotes and backslash escapes, expanding variables from `env`. */
function shellWords(text: string, env: Record<string, string>): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
    } else if (c === '\\' && i + 1 < text.length) {
      word = (word ?? '') + text[++i];
    } else if (c === '$') {
      const m = /^\$(?:\{(\w+)\}|(\w+))/.exec(text.slice(i));
      if (!m) word = (word ?? '') + c;
      else {
        word = (word ?? '') + (env[(m[1] ?? m[2])!] ?? '');
        i += m[0].length - 1;
      }
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new Error(`unterminated ${quote} in ${text}`);
  if (word !== undefined) words.push(word);
  return words;
}

/** The patterns of a .dockerignore file (comments and blank lines dropped). */
export function readDockerignore(path = DOCKERIGNORE): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

function patternRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') {
        i++;
        re += '(?:.*/)?'; // `**/`: any number of directories, none included
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[' && pattern.indexOf(']', i + 2) > 0) {
      const end = pattern.indexOf(']', i + 2);
      re += `[${pattern
        .slice(i + 1, end)
        .replace(/^[!^]/, '^')
        .replace(/\\/g, '\\\\')}]`;
      i = end;
    } else {
      if (c === '\\' && i + 1 < pattern.length) i++;
      re += pattern[i]!.replace(/[.+^${}()|[\]\\*?]/g, '\\$&');
    }
  }
  return new RegExp(`^${re}$`);
}

export interface DockerignoreMatcher {
  /** Whether `path` (relative to the context root, `/`-separated) stays out of the build context. */
  ignored(path: string): boolean;
  /** Whether some `!` pattern could bring back something below an ignored directory. */
  hasExceptions: boolean;
}

/** Docker's .dockerignore semantics: the last matching pattern wins; matching a parent directory counts. */
export function dockerignoreMatcher(patterns: string[] = readDockerignore()): DockerignoreMatcher {
  const rules = patterns.map((p) => {
    const exception = p.startsWith('!');
    const clean = p
      .slice(exception ? 1 : 0)
      .trim()
      .replace(/^(\.?\/)+/, '')
      .replace(/\/+$/, '');
    return { exception, re: patternRegExp(clean) };
  });
  return {
    hasExceptions: rules.some((r) => r.exception),
    ignored(path: string) {
      const parts = path.split('/').filter((p) => p && p !== '.');
      let ignored = false;
      for (const r of rules) {
        for (let n = parts.length; n >= 1; n--) {
          if (r.re.test(parts.slice(0, n).join('/'))) {
            ignored = !r.exception;
            break;
          }
        }
      }
      return ignored;
    },
  };
}
