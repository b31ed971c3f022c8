/**
 * What a psync command is: a one-line summary, the flags it takes (the one place they
 * are declared: parsing, validation and `--help` all read them here) and what it does.
 */
import type { Client } from '@connectrpc/connect';
import type { DescService } from '@bufbuild/protobuf';
import { UsageError } from './args';

/** One flag of a command. */
export interface FlagSpec {
  /** Placeholder of the value in usage lines (`WID`, `D`); absent: a switch, present or absent, never a value. */
  readonly value?: string;
  /** Must be given. */
  readonly required?: boolean;
  /** Must be given unless this other flag is (`booking confirm`: the nights unless `--hold`). */
  readonly requiredUnless?: string;
  /** Checks a given value: undefined when fine, else one phrase naming the flag and what it takes. */
  readonly check?: (value: string) => string | undefined;
  /** One line for `--help`. */
  readonly doc: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The flags of a command as its `run` receives them: required ones always present. */
export type FlagValues<F extends FlagSpecs> = {
  [K in keyof F as F[K] extends { required: true } ? K : never]: string;
} & {
  [K in keyof F as F[K] extends { required: true } ? never : K]?: string;
};

/** The internal API clients a command calls through; the credential is looked up on first use. */
export interface CommandClients {
  client<T extends DescService>(service: T, baseUrl: string): Client<T>;
}

export interface CommandContext {
  clients: CommandClients;
  /** PSYNC_INTERNAL_URL. */
  baseUrl: string;
}

/** A command as main.ts and help.ts see it. */
export interface Command {
  /** One line: what it does and what it prints. */
  readonly summary: string;
  readonly flags: FlagSpecs;
  /** The flags part of the usage line, when the generated one cannot say it (exclusive flags). */
  readonly usage?: string;
  /** Further lines for `--help`. */
  readonly notes?: readonly string[];
  /** The item fields `--output table` shows as columns, in order (list commands: `{"items":[…]}`). */
  readonly columns?: readonly string[];
  /** The flag a word after the command's words stands for (`psync request show <instance>` is `--instance`). */
  readonly positional?: string;
  /** Every unknown, missing or bad flag, each one phrase; empty when the flags can run. */
  problems(flags: ReadonlyMap<string, string>): string[];
  /** Checks the flags (any problem: one usage error listing them all), then runs; resolves with the one JSON object to print. */
  execute(flags: Map<string, string>, ctx: CommandContext): Promise<Record<string, unknown>>;
}

export interface CommandDefinition<F extends FlagSpecs> {
  summary: string;
  flags: F;
  usage?: string;
  notes?: readonly string[];
  columns?: readonly string[];
  positional?: keyof F & string;
  run(f: FlagValues<F>, ctx: CommandContext): Promise<Record<string, unknown>>;
}

/**
 * Every problem with `flags` against `specs`, in one list: unknown flags, missing
 * required ones (`requiredUnless` counted), then each given value its `check` refuses.
 */
export function flagProblems(specs: FlagSpecs, flags: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const unknown = [...flags.keys()].filter((n) => !Object.hasOwn(specs, n));
  if (unknown.length > 0) problems.push(`unknown flag${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `--${n}`).join(', ')}`);
  const missing = Object.entries(specs)
    .filter(([n, spec]) => !flags.has(n) && (spec.required || (spec.requiredUnless !== undefined && !flags.has(spec.requiredUnless))))
    .map(([n]) => `--${n}`);
  if (missing.length > 0) problems.push(`missing ${missing.join(', ')}`);
  for (const [n, spec] of Object.entries(specs)) {
    const value = flags.get(n);
    const problem = value === undefined ? undefined : spec.check?.(value);
    if (problem) problems.push(problem);
  }
  return problems;
}

/** Declares a command: its flags are checked against `flags` before `run` sees them. */
export function command<const F extends FlagSpecs>(def: CommandDefinition<F>): Command {
  const problems = (flags: ReadonlyMap<string, string>) => flagProblems(def.flags, flags);
  return {
    summary: def.summary,
    flags: def.flags,
    usage: def.usage,
    notes: def.notes,
    columns: def.columns,
    positional: def.positional,
    problems,
    execute: (flags, ctx) => {
      const found = problems(flags);
      if (found.length > 0) throw new UsageError(found.join('; '));
      return def.run(Object.fromEntries(flags) as unknown as FlagValues<F>, ctx);
    },
  };
}

/** The flags of a command that take a value. */
export function valueFlagsOf(cmd: Command | undefined): ReadonlySet<string> {
  if (!cmd) return new Set();
  return new Set(
    Object.entries(cmd.flags)
      .filter(([, spec]) => spec.value !== undefined)
      .map(([name]) => name),
  );
}

/** The switches (flags without a value) of a command. */
export function switchesOf(cmd: Command | undefined): ReadonlySet<string> {
  if (!cmd) return new Set();
  return new Set(
    Object.entries(cmd.flags)
      .filter(([, spec]) => spec.value === undefined)
      .map(([name]) => name),
  );
}

/** The command `words` name, with the value of its positional flag when the last word is one. */
export interface ResolvedCommand {
  name: string;
  command: Command;
  /** The positional flag's name and value, when a trailing word gave it. */
  positional?: { flag: string; value: string };
}

/** Resolves `words`: a command's own words, or those followed by one word its positional flag takes. */
export function resolveCommand(commands: Readonly<Record<string, Command>>, words: readonly string[]): ResolvedCommand | undefined {
  const name = words.join(' ');
  const exact = commands[name];
  if (exact) return { name, command: exact };
  if (words.length < 2) return undefined;
  const shorter = words.slice(0, -1).join(' ');
  const command = commands[shorter];
  if (!command?.positional) return undefined;
  return { name: shorter, command, positional: { flag: command.positional, value: words[words.length - 1]! } };
}
