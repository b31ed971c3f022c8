/**
 * `psync completion bash|zsh`: a shell completion script generated from the command
 * registry (command words, each command's flags, the choices of a flag whose value
 * placeholder lists them, such as `sandbox|production`). Load it with
 * `source <(psync completion bash)` (zsh: after `compinit`).
 */
import { UsageError } from './args';
import { OUTPUT_FLAG } from './output';
import type { Command } from './registry';

/** Shells a script can be printed for. */
export const SHELLS = ['bash', 'zsh'] as const;

/** Words psync takes besides the registry's commands. */
const BUILTINS = ['help', 'completion'];

interface Completions {
  /** Candidates after the command words typed so far ('' = none yet). */
  next: Map<string, string[]>;
  /** Choices of a flag's value, by `<command>|--flag`. */
  values: Map<string, string[]>;
}

function completions(commands: Readonly<Record<string, Command>>): Completions {
  const next = new Map<string, string[]>();
  const add = (prefix: string, word: string) => {
    const list = next.get(prefix) ?? [];
    if (!list.includes(word)) list.push(word);
    next.set(prefix, list);
  };
  const values = new Map<string, string[]>();
  for (const [name, cmd] of Object.entries(commands)) {
    const words = name.split(' ');
    words.forEach((w, i) => add(words.slice(0, i).join(' '), w));
    for (const [flag, spec] of Object.entries(cmd.flags)) {
      add(name, `--${flag}`);
      if (spec.value?.includes('|')) values.set(`${name}|--${flag}`, spec.value.split('|'));
    }
    add(name, `--${OUTPUT_FLAG}`);
    add(name, '--help');
  }
  for (const b of BUILTINS) add('', b);
  next.set('completion', [...SHELLS]);
  next.set(
    'help',
    Object.keys(commands)
      .map((n) => n.split(' ')[0]!)
      .filter((w, i, all) => all.indexOf(w) === i),
  );
  return { next, values };
}

/** A shell single-quoted word. */
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function bash(c: Completions): string {
  const cases = [...c.next].map(([prefix, words]) => `    ${quote(prefix)}) words=${quote(words.join(' '))} ;;`);
  const valueCases = [...c.values].map(([key, words]) => `    ${quote(key)}) words=${quote(words.join(' '))} ;;`);
  valueCases.push(`    *${quote(`|--${OUTPUT_FLAG}`)}) words='json table' ;;`);
  return `# psync completion for bash, generated from psync's commands.
# Load it with: source <(psync completion bash)
_psync() {
  local cur prev cmd="" i words=""
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # The command words typed so far: those before the first flag.
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ "\${COMP_WORDS[i]}" == -* ]] && break
    cmd="\${cmd:+$cmd }\${COMP_WORDS[i]}"
  done
  case "$cmd|$prev" in
${valueCases.join('\n')}
  esac
  if [[ -z "$words" ]]; then
    case "$cmd" in
${cases.join('\n')}
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _psync psync
`;
}

function zsh(c: Completions): string {
  const cases = [...c.next].map(([prefix, words]) => `    ${quote(prefix)}) candidates=(${words.map(quote).join(' ')}) ;;`);
  const valueCases = [...c.values].map(([key, words]) => `    ${quote(key)}) candidates=(${words.map(quote).join(' ')}) ;;`);
  valueCases.push(`    *${quote(`|--${OUTPUT_FLAG}`)}) candidates=('json' 'table') ;;`);
  return `#compdef psync
# psync completion for zsh, generated from psync's commands.
# Load it with: source <(psync completion zsh)   (after compinit)
_psync() {
  local cmd="" i
  local -a candidates
  # The command words typed so far: those before the first flag.
  for ((i = 2; i < CURRENT; i++)); do
    [[ "\${words[i]}" == -* ]] && break
    cmd="\${cmd:+$cmd }\${words[i]}"
  done
  case "$cmd|\${words[CURRENT-1]}" in
${valueCases.join('\n')}
  esac
  if (( \${#candidates} == 0 )); then
    case "$cmd" in
${cases.join('\n')}
    esac
  fi
  compadd -a candidates
}
compdef _psync psync
`;
}

/** The script for `psync completion <shell>`; a missing or unknown shell is a usage error. */
export function completionScript(commands: Readonly<Record<string, Command>>, words: string[]): string {
  const shell = words.join(' ');
  if (shell === 'bash') return bash(completions(commands));
  if (shell === 'zsh') return zsh(completions(commands));
  throw new UsageError(shell === '' ? 'psync completion needs a shell: bash or zsh' : `psync completion: unknown shell "${shell}" (bash or zsh)`);
}
