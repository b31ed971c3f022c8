/**
 * The error of a configuration value that cannot be used, and how an entry point
 * reports it: one clear line on stderr and a non-zero exit (config.ts reads and
 * validates the settings).
 */

/** A configuration value that cannot be used; the message is one line for the operator. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Prints a ConfigError as one line on stderr and exits 1; rethrows anything else. */
export function exitOnConfigError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`configuration error: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
