/**
 * Argument parsing for psync: `psync <words…> --flag value …`, on node:util
 * `parseArgs`. The command words come first; the named command says which flags take
 * a value (`--name x` or `--name=x`) and which are switches (present or absent, never
 * a value); `--help`/`-h` works anywhere. Problems are collected, not thrown, so one
 * line can report every bad and missing flag at once.
 */
import { parseArgs as parseArgv } from 'node:util';

/** A usage error: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export interface ParsedArgs {
  /** The command words, e.g. ["key", "issue"]. */
  words: string[];
  flags: Map<string, string>;
  /** `--help` or `-h` was given. */
  help: boolean;
  /** What could not be parsed (a flag without its value, a value given to a switch, …), each one phrase. */
  problems: string[];
}

/** The flags of the command named by `words`: those taking a value, and switches. Others are unknown (they take a value). */
export interface FlagKinds {
  values: Iterable<string>;
  switches: Iterable<string>;
}

export type FlagLookup = (words: string[]) => FlagKinds;

const NO_FLAGS: FlagLookup = () => ({ values: [], switches: [] });

const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h';

/** Parses argv; `lookup` says which flags of the named command take a value and which are switches. */
export function parseArgs(argv: string[], lookup: FlagLookup = NO_FLAGS): ParsedArgs {
  const first = argv.findIndex((a) => a.startsWith('-'));
  const words = first < 0 ? [...argv] : argv.slice(0, first);
  const rest = first < 0 ? [] : argv.slice(first);
  const kinds = lookup(words);
  const values = new Set(kinds.values);
  const switches = new Set(kinds.switches);
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const name of values) if (name !== 'help') options[name] = { type: 'string' };
  for (const name of switches) if (name !== 'help') options[name] = { type: 'boolean' };

  // Not strict: unknown flags and misplaced values become tokens this loop explains.
  const { tokens } = parseArgv({ args: rest, options, strict: false, allowPositionals: true, tokens: true });
  const flags = new Map<string, string>();
  const problems: string[] = [];
  let help = false;
  const consumed = new Set<number>();
  for (let t = 0; t < tokens.length; t++) {
    const token = tokens[t]!;
    if (token.kind === 'option-terminator') {
      problems.push('unexpected argument "--"');
      continue;
    }
    if (token.kind === 'positional') {
      if (!consumed.has(t)) problems.push(`unexpected argument "${token.value}" after flags`);
      continue;
    }
    const { name, rawName } = token;
    if (name === 'help') {
      if (token.inlineValue) problems.push('--help takes no value');
      else help = true;
      continue;
    }
    if (!rawName.startsWith('--')) {
      // A short flag other than -h: psync has none. Its value, if any, goes with it.
      if (tokens[t + 1]?.kind === 'positional') consumed.add(t + 1);
      problems.push(`unknown flag ${rawName}`);
      continue;
    }
    if (name === '') {
      problems.push(`empty flag "${rawName}${token.inlineValue ? `=${token.value}` : ''}"`);
      continue;
    }
    let value: string | undefined;
    if (switches.has(name)) {
      if (token.inlineValue) {
        problems.push(`--${name} takes no value`);
        continue;
      }
      value = 'true';
    } else if (values.has(name)) {
      // `--name --help`: asking for help, not naming something "--help".
      if (!token.inlineValue && isHelp(token.value)) {
        help = true;
        continue;
      }
      value = token.value;
    } else {
      // Unknown to this command: it takes the next argument as its value, as a known flag would.
      value = token.value;
      const next = tokens[t + 1];
      if (value === undefined && next?.kind === 'positional') {
        value = next.value;
        consumed.add(t + 1);
      } else if (value === undefined && next?.kind === 'option' && next.name === 'help' && !next.inlineValue) {
        continue; // `--name --help`, as above
      }
    }
    if (value === undefined) problems.push(`--${name} needs a value`);
    else if (flags.has(name)) problems.push(`--${name} given twice`);
    else flags.set(name, value);
  }
  return { words, flags, help, problems };
}
