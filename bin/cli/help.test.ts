import { UsageError } from './args';
import { commands } from './command-set';
import { helpText, usageOf } from './help';

describe('psync help', () => {
  test('the overview lists every command with its one-line summary, and help itself', () => {
    const text = helpText(commands, []);
    expect(helpText(commands, ['help'])).toBe(text);
    for (const [name, cmd] of Object.entries(commands)) {
      expect(cmd.summary).not.toContain('\n');
      expect(text).toMatch(new RegExp(`^  ${name.replace(/[-]/g, '\\-')} +${cmd.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    }
    expect(text).toMatch(/^ {2}help +\S/m);
    expect(text).toMatch(/^ {2}completion bash\|zsh +\S/m);
    expect(text).toContain('--output table');
    expect(text).toContain('PSYNC_TOKEN');
    expect(text).toContain('keys/operator.token');
  });

  test("every command's help has its usage line naming every flag, each flag's description, and --help", () => {
    for (const [name, cmd] of Object.entries(commands)) {
      const text = helpText(commands, name.split(' '));
      const usage = text.split('\n')[0]!;
      expect(usage).toBe(`usage: ${usageOf(name, cmd)}`);
      for (const [flag, spec] of Object.entries(cmd.flags)) {
        expect(usage).toContain(`--${flag}`);
        expect(text).toContain(spec.doc);
      }
      expect(text).toMatch(/^ {2}--help +this help$/m);
      expect(text).toMatch(/^ {2}--output json\|table +\(optional\) json \(default\)/m);
    }
  });

  test('booking confirm: --hold, or the listing and nights', () => {
    const cmd = commands['booking confirm']!;
    expect(usageOf('booking confirm', cmd)).toBe(
      'psync booking confirm (--hold HID | --listing LID --check-in D --check-out D) --guest-id GID --guest-name NAME --party-size N --amount 123.45 --currency EUR [--idempotency-key KEY]',
    );
    const text = helpText(commands, ['booking', 'confirm']);
    expect(text).toMatch(/^ {2}--hold HID +\(optional\) a live hold/m);
    expect(text).toMatch(/^ {2}--listing LID +the listing id \(not needed with --hold\)$/m);
  });

  test('hold place, booking confirm and booking cancel take --idempotency-key, checked before anything is called', () => {
    for (const words of ['hold place', 'booking confirm', 'booking cancel']) {
      const text = helpText(commands, words.split(' '));
      expect([words, text]).toEqual([
        words,
        expect.stringMatching(/^ {2}--idempotency-key KEY +\(optional\) makes a retry safe: the same key with the same flags answers what the first call did/m),
      ]);
      const flags = new Map([['idempotency-key', 'two words']]);
      expect([words, commands[words]!.problems(flags)]).toEqual([
        words,
        expect.arrayContaining(['--idempotency-key must be 1 to 255 visible ASCII characters (no spaces), e.g. a UUID']),
      ]);
      expect([words, commands[words]!.problems(new Map([['idempotency-key', 'k'.repeat(256)]]))]).toEqual([
        words,
        expect.arrayContaining([expect.stringMatching(/^--idempotency-key must be/)]),
      ]);
      expect([words, commands[words]!.problems(new Map([['idempotency-key', '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f']])).some((p) => p.includes('idempotency'))]).toEqual([
        words,
        false,
      ]);
    }
  });

  test('psync help completion', () => {
    expect(helpText(commands, ['completion']).split('\n')[0]).toBe('usage: psync completion bash|zsh');
  });

  test('usage lines: required flags bare, optional ones in brackets, switches without a value', () => {
    expect(usageOf('key issue', commands['key issue']!)).toBe('psync key issue --workspace WID');
    expect(usageOf('client list', commands['client list']!)).toBe('psync client list [--all]');
    expect(usageOf('property show', commands['property show']!)).toBe('psync property show --workspace WID --provider-id PID');
    expect(usageOf('deliveries list', commands['deliveries list']!)).toBe('psync deliveries list --workspace WID [--state pending|delivered|abandoned]');
  });

  test('a group lists its commands; unknown words are a usage error', () => {
    const text = helpText(commands, ['key']);
    expect(text.split('\n')[0]).toBe('usage: psync key <issue|revoke> [--flag value …]');
    expect(text).toContain(commands['key issue']!.summary);
    expect(text).toContain(commands['key revoke']!.summary);
    expect(text).not.toContain('client issue');
    expect(() => helpText(commands, ['frobnicate'])).toThrow(UsageError);
  });
});
