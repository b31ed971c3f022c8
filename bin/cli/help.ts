/**
 * `psync help [words…]` and `--help` at every level: the command list, a group's
 * commands (`psync key --help`), one command's usage and flags
 * (`psync key issue --help`). Plain text on stdout, exit 0; the one place usage lines
 * are built, from each command's declared flags.
 */
import { UsageError } from './args';
import type { Command } from './registry';

/** The flags part of a command's usage line: required ones first as declared, optional ones in brackets. */
export function usageOf(name: string, cmd: Command): string {
  if (cmd.usage !== undefined) return `psync ${name} ${cmd.usage}`;
  const parts = Object.entries(cmd.flags).map(([flag, spec]) => {
    const text = spec.value === undefined ? `--${flag}` : `--${flag} ${spec.value}`;
    return spec.required ? text : `[${text}]`;
  });
  return ['psync', name, ...parts].join(' ');
}

/** Two columns, the first padded to its widest entry. */
function columns(rows: [string, string][], indent = '  '): string[] {
  const width = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `${indent}${a.padEnd(width)}  ${b}`);
}

function commandList(commands: Readonly<Record<string, Command>>, names: string[]): string[] {
  return columns(names.map((n) => [n, commands[n]!.summary]));
}

const CREDENTIAL_LINES = [
  'credential: PSYNC_TOKEN when set, otherwise the file $DATA_DIR/keys/operator.token (DATA_DIR defaults to ./.data),',
  '  which a system started without OPERATOR_TOKEN writes at its first start.',
];

function overview(commands: Readonly<Record<string, Command>>): string[] {
  return [
    'psync: the Partner Sync operator CLI. It calls the internal API at PSYNC_INTERNAL_URL (default http://127.0.0.1:8081).',
    '',
    'usage: psync <command> [--flag value …]',
    "       psync <command> --help    a command's usage and flags",
    "       psync help [<command>]    this list, or a command's usage",
    '       psync <command> --output table    a table for people instead of the JSON object',
    '',
    'commands:',
    ...columns([
      ...Object.entries(commands).map(([n, c]): [string, string] => [n, c.summary]),
      ['help', "lists the commands, or shows one command's usage"],
      ['completion bash|zsh', 'prints a shell completion script: source <(psync completion bash)'],
    ]),
    '',
    ...CREDENTIAL_LINES,
    'Each command prints one JSON object on stdout and exits 0; a failure prints one line on stderr and exits',
    '2 (usage error) or 1 (anything else).',
  ];
}

function commandHelp(name: string, cmd: Command): string[] {
  const flags: [string, string][] = Object.entries(cmd.flags).map(([flag, spec]) => [
    spec.value === undefined ? `--${flag}` : `--${flag} ${spec.value}`,
    `${spec.required || spec.requiredUnless !== undefined ? '' : '(optional) '}${spec.doc}`,
  ]);
  flags.push(['--output json|table', '(optional) json (default): one JSON object; table: aligned columns for people']);
  flags.push(['--help', 'this help']);
  return [`usage: ${usageOf(name, cmd)}`, '', `${name}: ${cmd.summary}`, ...(cmd.notes ?? []), '', 'flags:', ...columns(flags), '', ...CREDENTIAL_LINES];
}

const COMPLETION_HELP = [
  'usage: psync completion bash|zsh',
  '',
  "completion: prints a shell completion script for psync's commands, flags and flag choices.",
  '  bash: source <(psync completion bash)          (or save it under /etc/bash_completion.d/psync)',
  '  zsh:  source <(psync completion zsh)           (after compinit; or save it as _psync on your fpath)',
];

/**
 * The help text for `words`: the overview for none (or `help`), one command's usage,
 * or the commands of a group such as `key`. Unknown words are a usage error.
 */
export function helpText(commands: Readonly<Record<string, Command>>, words: string[]): string {
  const name = words.join(' ');
  if (words.length === 0 || name === 'help') return `${overview(commands).join('\n')}\n`;
  if (name === 'completion') return `${COMPLETION_HELP.join('\n')}\n`;
  const cmd = commands[name];
  if (cmd) return `${commandHelp(name, cmd).join('\n')}\n`;
  const group = groupOf(commands, words);
  if (group.length > 0) {
    return (
      [
        `usage: psync ${name} <${group.map((n) => n.slice(name.length + 1)).join('|')}> [--flag value …]`,
        '',
        'commands:',
        ...commandList(commands, group),
        '',
        `psync ${name} <command> --help shows a command's flags.`,
      ].join('\n') + '\n'
    );
  }
  throw new UsageError(`unknown command "${name}" (psync help lists the commands)`);
}

/** The commands whose words start with `words` (a group such as `key` or `deliveries`). */
export function groupOf(commands: Readonly<Record<string, Command>>, words: string[]): string[] {
  const prefix = `${words.join(' ')} `;
  return Object.keys(commands).filter((n) => n.startsWith(prefix));
}
