/**
 * What a psync command is: a one-line summary, the flags it takes (the one place they
 * are declared: parsing, validation and `--help` all read them here) and what it does.
 */
import type { Client } from '@connectrpc/connect';
import type { DescService } from '@bufbuild/protobuf';
import { takeFlags } from './args';

/** One flag of a command. */
export interface FlagSpec {
  /** Placeholder of the value in usage lines (`WID`, `D`); absent: a switch, present or absent, never a value. */
  readonly value?: string;
  /** Must be given. */
  readonly required?: boolean;
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
  /** Checks the flags (unknown, missing: usage errors), then runs; resolves with the one JSON object to print. */
  execute(flags: Map<string, string>, ctx: CommandContext): Promise<Record<string, unknown>>;
}

export interface CommandDefinition<F extends FlagSpecs> {
  summary: string;
  flags: F;
  usage?: string;
  notes?: readonly string[];
  run(f: FlagValues<F>, ctx: CommandContext): Promise<Record<string, unknown>>;
}

/** Declares a command: its flags are checked against `flags` before `run` sees them. */
export function command<const F extends FlagSpecs>(def: CommandDefinition<F>): Command {
  const names = Object.keys(def.flags);
  const required = names.filter((n) => def.flags[n]!.required);
  const optional = names.filter((n) => !def.flags[n]!.required);
  return {
    summary: def.summary,
    flags: def.flags,
    usage: def.usage,
    notes: def.notes,
    execute: (flags, ctx) => def.run(takeFlags(flags, required, optional) as unknown as FlagValues<F>, ctx),
  };
}

/** The switches (flags without a value) of a command. */
export function switchesOf(cmd: Command | undefined): ReadonlySet<string> {
  if (!cmd) return new Set();
  return new Set(Object.entries(cmd.flags).filter(([, spec]) => spec.value === undefined).map(([name]) => name));
}
