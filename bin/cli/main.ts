/**
 * psync entry point: parse, call the internal API with the operator credential, print
 * exactly one JSON object on stdout (or, with `--output table`, an aligned table) and
 * exit 0; on failure one line on stderr and a non-zero exit (2 usage, 1 anything else).
 * `psync help`, `--help` and `psync completion bash|zsh` print text on stdout and exit 0
 * without calling anything.
 */
import type { DescService } from '@bufbuild/protobuf';
import { ConnectError, Code, type Client } from '@connectrpc/connect';
import { InternalClients, type InternalTls } from '../../services/kit/rpc';
import { internalTls } from '../../services/kit/runtime';
import { parseArgs, UsageError } from './args';
import { commands } from './command-set';
import { completionScript } from './completion';
import { CredentialError, describeSource, resolveOperatorCredential, type OperatorCredential } from './credentials';
import { groupOf, helpText } from './help';
import { OUTPUT_FLAG, outputProblem, renderTable } from './output';
import { serviceRefusal } from './refusal';
import { resolveCommand, switchesOf, valueFlagsOf, type CommandClients } from './registry';

/**
 * TLS for an https:// PSYNC_INTERNAL_URL, from the variables the services read
 * (INTERNAL_TLS_CA, and INTERNAL_TLS_CERT/KEY as the client certificate under mutual
 * TLS): inside a pod (`kubectl exec … psync`) they are already set.
 */
function cliTls(env: NodeJS.ProcessEnv = process.env): InternalTls {
  return internalTls({
    internalTlsCa: env.INTERNAL_TLS_CA || undefined,
    internalTlsCert: env.INTERNAL_TLS_CERT || undefined,
    internalTlsKey: env.INTERNAL_TLS_KEY || undefined,
    internalTlsRequireClientCert: false,
  }).client;
}

/** How long one call may take. */
const CALL_TIMEOUT_MS = 30000;

/**
 * The clients a command calls through. The credential is looked up on the first call,
 * so usage errors and help never need one.
 */
class OperatorClients implements CommandClients {
  credential?: OperatorCredential;
  private clients?: InternalClients;

  client<T extends DescService>(service: T, baseUrl: string): Client<T> {
    this.credential ??= resolveOperatorCredential();
    this.clients ??= new InternalClients([], CALL_TIMEOUT_MS, { token: this.credential.token, tls: cliTls() });
    return this.clients.client(service, baseUrl);
  }

  close(): void {
    this.clients?.close();
  }
}

async function main(argv: string[]): Promise<number> {
  // Inside a pod whose internal port speaks TLS (INTERNAL_TLS_CERT set), its own port is https.
  const baseUrl = process.env.PSYNC_INTERNAL_URL || `${process.env.INTERNAL_TLS_CERT ? 'https' : 'http'}://127.0.0.1:8081`;
  const clients = new OperatorClients();
  try {
    const { words, flags, help, problems } = parseArgs(argv, (w) => {
      const cmd = resolveCommand(commands, w)?.command;
      return { values: [...valueFlagsOf(cmd), OUTPUT_FLAG], switches: switchesOf(cmd) };
    });
    // --output is every command's: taken out before the command's own flags are checked.
    const output = flags.get(OUTPUT_FLAG) ?? 'json';
    flags.delete(OUTPUT_FLAG);
    const bad = outputProblem(output);
    if (bad) problems.push(bad);
    if (help || words[0] === 'help') {
      if (flags.size > 0 && !help) problems.push(`unknown flag --${[...flags.keys()][0]!}`);
      if (problems.length > 0) throw new UsageError(problems.join('; '));
      const asked = words[0] === 'help' ? words.slice(1) : words;
      // `psync request show <instance> --help`: the command's help, its positional word aside.
      process.stdout.write(helpText(commands, resolveCommand(commands, asked)?.name.split(' ') ?? asked));
      return 0;
    }
    if (words[0] === 'completion') {
      if (flags.size > 0) problems.push(`unknown flag --${[...flags.keys()][0]!}`);
      if (problems.length > 0) throw new UsageError(problems.join('; '));
      process.stdout.write(completionScript(commands, words.slice(1)));
      return 0;
    }
    const resolved = resolveCommand(commands, words);
    if (!resolved) throw new UsageError([unknownCommand(words), ...problems].join('; '));
    const { command, positional } = resolved;
    if (positional) {
      if (flags.has(positional.flag)) problems.push(`--${positional.flag} given twice`);
      else flags.set(positional.flag, positional.value);
    }
    // Every problem at once: what could not be parsed, then unknown, missing and bad flags.
    problems.push(...command.problems(flags));
    if (problems.length > 0) throw new UsageError(problems.join('; '));
    const out = await command.execute(flags, { clients, baseUrl });
    process.stdout.write(output === 'table' ? renderTable(out, command.columns) : `${JSON.stringify(out)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`psync: ${describe(err, baseUrl, clients.credential)}\n`);
    return err instanceof UsageError ? 2 : 1;
  } finally {
    clients.close();
  }
}

/** The one line for words that name no command. */
function unknownCommand(words: string[]): string {
  if (words.length === 0) {
    return `usage: psync <command> [--flag value …] (psync help explains each); commands: ${Object.keys(commands).join(', ')}`;
  }
  const group = groupOf(commands, words);
  if (group.length > 0) return `"${words.join(' ')}" needs a command: ${group.join(', ')} (psync ${words.join(' ')} --help)`;
  return `unknown command "${words.join(' ')}" (psync help lists the commands)`;
}

/** One human line for an error; never a stack trace, never the credential. */
function describe(err: unknown, baseUrl: string, credential: OperatorCredential | undefined): string {
  if (err instanceof UsageError || err instanceof CredentialError) return err.message;
  if (err instanceof ConnectError) {
    const from = credential ? describeSource(credential.source) : 'the operator credential';
    if (err.code === Code.Unavailable) return `cannot reach the internal API at ${baseUrl} (is the system running? set PSYNC_INTERNAL_URL)`;
    if (err.code === Code.Unauthenticated) {
      return (
        `the internal API at ${baseUrl} refused the operator credential (${from}): set PSYNC_TOKEN to the system's ` +
        'operator token (its OPERATOR_TOKEN), or run psync with the DATA_DIR of a system that generated keys/operator.token'
      );
    }
    if (err.code === Code.PermissionDenied) {
      return (
        `the internal API at ${baseUrl} does not let this credential (${from}) make the call: ${oneLine(err.rawMessage)}; ` +
        "PSYNC_TOKEN must be the operator token, not a service's or a marketplace client's"
      );
    }
    return oneLine(serviceRefusal(err, baseUrl, CALL_TIMEOUT_MS));
  }
  return oneLine(err instanceof Error ? err.message : String(err));
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ');
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
