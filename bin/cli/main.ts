/**
 * psync entry point: parse, call the internal API, print exactly one JSON object on
 * stdout and exit 0; on failure one line on stderr and a non-zero exit
 * (2 usage, 1 anything else).
 */
import { ConnectError, Code } from '@connectrpc/connect';
import { InternalClients } from '../../services/kit/internal-client';
import { parseArgs, UsageError } from './args';
import { commands } from './commands';

async function main(argv: string[]): Promise<number> {
  const baseUrl = process.env.PSYNC_INTERNAL_URL || 'http://127.0.0.1:8081';
  const clients = new InternalClients([], 30000);
  try {
    const { words, flags } = parseArgs(argv);
    const name = words.join(' ');
    const command = commands[name];
    if (!command) {
      throw new UsageError(
        words.length === 0 ? `usage: psync <command> [--flag value …]; commands: ${Object.keys(commands).join(', ')}` : `unknown command "${name}"`,
      );
    }
    const out = await command({ flags, clients, baseUrl });
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`psync: ${describe(err, baseUrl)}\n`);
    return err instanceof UsageError ? 2 : 1;
  } finally {
    clients.close();
  }
}

/** One human line for an error; never a stack trace. */
function describe(err: unknown, baseUrl: string): string {
  if (err instanceof UsageError) return err.message;
  if (err instanceof ConnectError) {
    if (err.code === Code.Unavailable) return `cannot reach the internal API at ${baseUrl} (is the system running? set PSYNC_INTERNAL_URL)`;
    return `${Code[err.code]}: ${err.rawMessage}`.replace(/\s+/g, ' ');
  }
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ');
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
