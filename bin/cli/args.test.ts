import { parseArgs, type FlagLookup } from './args';
import { flagProblems, type FlagSpecs } from './registry';

/** `client list` has the switch --all; `key issue` the value flag --workspace; nothing else is known. */
const lookup: FlagLookup = (words) => {
  const name = words.join(' ');
  return { values: name === 'key issue' ? ['workspace'] : [], switches: name === 'client list' ? ['all'] : [] };
};

describe('psync argument parsing', () => {
  test('words, then flags with values (`--f v` and `--f=v`)', () => {
    expect(parseArgs(['key', 'issue', '--workspace', 'w', '--x=y'], lookup)).toEqual({
      words: ['key', 'issue'],
      flags: new Map([
        ['workspace', 'w'],
        ['x', 'y'],
      ]),
      help: false,
      problems: [],
    });
    // An unknown flag takes the next argument as its value, like a known one.
    expect(parseArgs(['migrate', '--bogus', 'x']).flags).toEqual(new Map([['bogus', 'x']]));
    expect(parseArgs(['key', 'issue', '--workspace=']).flags.get('workspace')).toBe('');
  });

  test('--help and -h anywhere after the words, with or without other flags; never a flag of the command', () => {
    for (const argv of [['--help'], ['key', '--help'], ['key', 'issue', '-h'], ['key', 'issue', '--workspace', 'w', '--help'], ['key', 'issue', '--help', '--workspace', 'w']]) {
      const parsed = parseArgs(argv, lookup);
      expect(parsed.help).toBe(true);
      expect(parsed.flags.has('help')).toBe(false);
      expect(parsed.problems).toEqual([]);
    }
  });

  test('`--name --help` asks for help instead of naming something "--help"', () => {
    for (const argv of [
      ['key', 'issue', '--workspace', '--help'],
      ['workspace', 'create', '--name', '--help'],
    ]) {
      const parsed = parseArgs(argv, lookup);
      expect(parsed.help).toBe(true);
      expect(parsed.flags.size).toBe(0);
      expect(parsed.problems).toEqual([]);
    }
  });

  test("a command's switches take no value; other flags need one", () => {
    expect(parseArgs(['client', 'list', '--all'], lookup).flags.get('all')).toBe('true');
    expect(parseArgs(['client', 'list', '--all=yes'], lookup).problems).toEqual(['--all takes no value']);
    expect(parseArgs(['migrate', '--all'], lookup).problems).toEqual(['--all needs a value']);
    expect(parseArgs(['migrate', '--help=yes']).problems).toEqual(['--help takes no value']);
  });

  test('problems name the flag, and all are reported', () => {
    expect(parseArgs(['migrate', '--bogus']).problems).toEqual(['--bogus needs a value']);
    expect(parseArgs(['key', 'issue', '--workspace', 'a', '--workspace', 'b'], lookup).problems).toEqual(['--workspace given twice']);
    expect(parseArgs(['key', '--workspace', 'a', 'issue']).problems).toEqual(['unexpected argument "issue" after flags']);
    expect(parseArgs(['key', 'issue', '-w', 'x', '--workspace', 'a', '--workspace', 'b', 'extra', '--last'], lookup).problems).toEqual([
      'unknown flag -w',
      '--workspace given twice',
      'unexpected argument "extra" after flags',
      '--last needs a value',
    ]);
  });
});

describe('flag checks against a command', () => {
  const specs: FlagSpecs = {
    hold: { value: 'HID', doc: 'h' },
    listing: { value: 'LID', requiredUnless: 'hold', doc: 'l' },
    guest: { value: 'GID', required: true, doc: 'g' },
    size: { value: 'N', required: true, check: (v) => (/^\d+$/.test(v) ? undefined : '--size must be a number'), doc: 's' },
    currency: { value: 'EUR', check: (v) => (/^[A-Z]{3}$/.test(v) ? undefined : '--currency must be three letters'), doc: 'c' },
  };

  test('every unknown, missing and bad flag at once', () => {
    expect(
      flagProblems(
        specs,
        new Map([
          ['bogus', '1'],
          ['other', '2'],
          ['size', 'many'],
          ['currency', 'euro'],
        ]),
      ),
    ).toEqual(['unknown flags --bogus, --other', 'missing --listing, --guest', '--size must be a number', '--currency must be three letters']);
    expect(
      flagProblems(
        specs,
        new Map([
          ['listing', 'l'],
          ['guest', 'g'],
          ['size', '2'],
        ]),
      ),
    ).toEqual([]);
  });

  test('requiredUnless: not missing when the other flag is given', () => {
    expect(
      flagProblems(
        specs,
        new Map([
          ['hold', 'h'],
          ['guest', 'g'],
          ['size', '2'],
        ]),
      ),
    ).toEqual([]);
    expect(
      flagProblems(
        specs,
        new Map([
          ['guest', 'g'],
          ['size', '2'],
        ]),
      ),
    ).toEqual(['missing --listing']);
  });
});
