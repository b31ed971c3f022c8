import { execFileSync, spawnSync } from 'node:child_process';
import { UsageError } from './args';
import { commands } from './command-set';
import { completionScript } from './completion';

/** What bash completes for the command line `line` (the cursor at its end) with the script loaded. */
function bashCompletes(script: string, line: string): string[] {
  const words = line.split(' ');
  const program = `${script}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})
COMP_CWORD=${words.length - 1}
_psync
printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['-c', program], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

describe('psync completion', () => {
  const bash = completionScript(commands, ['bash']);

  test("bash: command words, then the named command's flags, then a flag's choices", () => {
    const first = bashCompletes(bash, 'psync ');
    for (const name of Object.keys(commands)) expect(first).toContain(name.split(' ')[0]);
    expect(first).toEqual(expect.arrayContaining(['help', 'completion']));
    expect(bashCompletes(bash, 'psync de')).toEqual(['deliveries', 'deletion-requests']);
    expect(bashCompletes(bash, 'psync deliveries ')).toEqual(['list', 'show', 'replay']);
    expect(bashCompletes(bash, 'psync deliveries list --')).toEqual(['--workspace', '--state', '--output', '--help']);
    expect(bashCompletes(bash, 'psync deliveries list --workspace W --state ')).toEqual(['pending', 'delivered', 'abandoned']);
    expect(bashCompletes(bash, 'psync workspace create --env s')).toEqual(['sandbox']);
    expect(bashCompletes(bash, 'psync client list --output ')).toEqual(['json', 'table']);
    expect(bashCompletes(bash, 'psync completion ')).toEqual(['bash', 'zsh']);
    expect(bashCompletes(bash, 'psync booking confirm --h')).toEqual(['--hold', '--help']);
  });

  test("every command's every flag is in both scripts, generated from the registry", () => {
    const zsh = completionScript(commands, ['zsh']);
    expect(zsh.startsWith('#compdef psync\n')).toBe(true);
    expect(zsh).toContain('compdef _psync psync');
    expect(bash).toContain('complete -F _psync psync');
    for (const [name, cmd] of Object.entries(commands)) {
      for (const script of [bash, zsh]) {
        expect(script).toContain(`'${name}')`);
        for (const flag of Object.keys(cmd.flags)) expect(script).toContain(`--${flag}`);
      }
    }
  });

  // zsh is not on every machine: this part runs where it is.
  const hasZsh = spawnSync('zsh', ['-c', 'true']).status === 0;
  (hasZsh ? test : test.skip)('zsh (where installed): the script parses, and completes like the bash one', () => {
    const zsh = completionScript(commands, ['zsh']);
    /** What _psync offers for `words` (the cursor on the last), compadd replaced by a printer. */
    const offers = (words: string[]) =>
      execFileSync(
        'zsh',
        ['-c', `compdef() { :; }\ncompadd() { shift; print -l -- \${(P)1}; }\n${zsh}\nwords=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}; _psync`],
        {
          encoding: 'utf8',
        },
      )
        .split('\n')
        .filter(Boolean);
    expect(offers(['psync', 'deliveries', ''])).toEqual(['list', 'replay']);
    expect(offers(['psync', 'deliveries', 'list', '--state', ''])).toEqual(['pending', 'delivered', 'abandoned']);
    expect(offers(['psync', 'key', 'issue', '--output', ''])).toEqual(['json', 'table']);
    expect(offers(['psync', 'booking', 'confirm', ''])).toContain('--hold');
  });

  test('the shell must be bash or zsh', () => {
    expect(() => completionScript(commands, [])).toThrow(new UsageError('psync completion needs a shell: bash or zsh'));
    expect(() => completionScript(commands, ['fish'])).toThrow(UsageError);
  });
});
