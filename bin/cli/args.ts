/**
 * Argument parsing for psync: `psync <words…> --flag value …`. Every flag takes a
 * value, except the switches listed in SWITCHES (present or absent, never a value);
 * unknown or missing flags are usage errors naming the flag.
 */

/** A usage error: printed as one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export interface ParsedArgs {
  /** The command words, e.g. ["key", "issue"]. */
  words: string[];
  flags: Map<string, string>;
}

/** Flags that take no value; a given switch reads as "true". */
export const SWITCHES: ReadonlySet<string> = new Set(['all-abandoned']);

export function parseArgs(argv: string[]): ParsedArgs {
  const words: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (SWITCHES.has(name) && eq > 0) throw new UsageError(`--${name} takes no value`);
      const value = SWITCHES.has(name) ? 'true' : eq > 0 ? a.slice(eq + 1) : argv[++i];
      if (!name) throw new UsageError(`empty flag "${a}"`);
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      if (flags.has(name)) throw new UsageError(`--${name} given twice`);
      flags.set(name, value);
    } else {
      if (flags.size > 0) throw new UsageError(`unexpected argument "${a}" after flags`);
      words.push(a);
    }
  }
  return { words, flags };
}

/** Reads the flags a command declares: required ones must be present, no others allowed. */
export function takeFlags<R extends string, O extends string = never>(
  flags: Map<string, string>,
  required: readonly R[],
  optional: readonly O[] = [],
): Record<R, string> & Partial<Record<O, string>> {
  const known = new Set<string>([...required, ...optional]);
  for (const name of flags.keys()) if (!known.has(name)) throw new UsageError(`unknown flag --${name}`);
  for (const name of required) if (!flags.has(name)) throw new UsageError(`missing --${name}`);
  return Object.fromEntries(flags) as Record<R, string> & Partial<Record<O, string>>;
}
