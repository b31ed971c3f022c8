/**
 * Argument parsing for psync: `psync <words…> --flag value …`. Every flag takes a
 * value, except a command's switches (present or absent, never a value) and
 * `--help`/`-h`, which any command takes; unknown or missing flags are usage errors
 * naming the flag.
 */

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
}

/** The switches of the command named by `words` (flags that take no value). */
export type SwitchLookup = (words: string[]) => ReadonlySet<string>;

const NO_SWITCHES: SwitchLookup = () => new Set();

/** Parses argv; `switchesOf` says which flags of the named command take no value. */
export function parseArgs(argv: string[], switchesOf: SwitchLookup = NO_SWITCHES): ParsedArgs {
  const words: string[] = [];
  const flags = new Map<string, string>();
  let help = false;
  let switches: ReadonlySet<string> | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') {
      help = true;
    } else if (a.startsWith('--')) {
      switches ??= switchesOf(words);
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (name === 'help') throw new UsageError('--help takes no value');
      if (switches.has(name) && eq > 0) throw new UsageError(`--${name} takes no value`);
      if (!switches.has(name) && eq < 0 && (argv[i + 1] === '--help' || argv[i + 1] === '-h')) {
        // `--name --help`: asking for help, not naming something "--help".
        help = true;
        i++;
        continue;
      }
      const value = switches.has(name) ? 'true' : eq > 0 ? a.slice(eq + 1) : argv[++i];
      if (!name) throw new UsageError(`empty flag "${a}"`);
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      if (flags.has(name)) throw new UsageError(`--${name} given twice`);
      flags.set(name, value);
    } else {
      if (flags.size > 0 || help) throw new UsageError(`unexpected argument "${a}" after flags`);
      words.push(a);
    }
  }
  return { words, flags, help };
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
