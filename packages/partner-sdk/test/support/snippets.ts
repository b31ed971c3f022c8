/**
 * Runs the verification snippets of docs/partners/webhook-verification.md against the
 * signature vectors, each in its own language.
 *
 * Each snippet is the one fenced block of its language in the guide, taken as written
 * (Go's `package webhook` clause becomes `package main` so that a `main` can sit next
 * to it). A small harness per language, kept here and not in the guide, reads the
 * cases from a tab-separated file (fields in base64 so that any body survives, `~` for
 * an absent header; Java has no JSON parser of its own) and prints one line per case:
 * `<name>\tok` or `<name>\t<error code>`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const GUIDE = join(__dirname, '..', '..', '..', '..', 'docs', 'partners', 'webhook-verification.md');
export const VECTORS = join(__dirname, '..', '..', '..', '..', 'docs', 'partners', 'signature-vectors.json');

export interface VectorCase {
  name: string;
  description: string;
  signer: { secret: string; previous_secret: string | null; timestamp: number; body: string };
  request: { headers: Record<string, string>; body: string };
  tampered: string[];
  receiver: { secrets: string[]; now: number; tolerance_seconds: number };
  expected: { valid: true } | { valid: false; error: string };
}

export interface Vectors {
  scheme: { default_tolerance_seconds: number; check_order: string[] };
  errors: Record<string, string>;
  cases: VectorCase[];
}

export function loadVectors(): Vectors {
  return JSON.parse(readFileSync(VECTORS, 'utf8')) as Vectors;
}

/** `ok` or the error code a case must produce. */
export function outcome(c: VectorCase): string {
  return c.expected.valid ? 'ok' : c.expected.error;
}

/** The fenced code blocks of `markdown` whose info string is `lang`. */
export function codeBlocks(markdown: string, lang: string): string[] {
  const blocks: string[] = [];
  const fence = /^```([^\n`]*)\n([\s\S]*?)^```\s*$/gm;
  for (let m = fence.exec(markdown); m; m = fence.exec(markdown)) if (m[1]!.trim() === lang) blocks.push(m[2]!);
  return blocks;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const field = (s: string | undefined) => (s === undefined ? '~' : b64(s));

/** The cases as the harnesses read them: name, body, X-Signature, X-Signature-Timestamp, X-Signature-Previous, secrets, now, tolerance. */
export function casesTsv(cases: VectorCase[]): string {
  return cases
    .map((c) => {
      const h = c.request.headers;
      return [
        c.name,
        b64(c.request.body),
        field(h['X-Signature']),
        field(h['X-Signature-Timestamp']),
        field(h['X-Signature-Previous']),
        c.receiver.secrets.map(b64).join(','),
        String(c.receiver.now),
        String(c.receiver.tolerance_seconds),
      ].join('\t');
    })
    .join('\n')
    .concat('\n');
}

/** One language: the guide's fence name, how to tell whether it is installed, and how to run its snippet over a case file. */
export interface Language {
  name: string;
  fence: string;
  /** Commands that must all succeed (exit 0) for the language to count as installed. */
  probes: string[][];
  /** Writes the snippet and the harness into `dir`; returns the commands to run there (the last prints the results). */
  prepare(dir: string, snippet: string, casesFile: string): string[][];
}

const PYTHON_HARNESS = `

import base64 as _b64
import sys as _sys


def _field(f):
    return None if f == "~" else _b64.b64decode(f).decode("utf-8")


for _line in open(_sys.argv[1], encoding="utf-8").read().splitlines():
    _name, _body, _sig, _ts, _prev, _secrets, _now, _tol = _line.split("\\t")
    try:
        verify_webhook(_b64.b64decode(_body), _field(_sig), _field(_ts), _field(_prev),
                       [_field(s) for s in _secrets.split(",")], tolerance=int(_tol), now=int(_now))
        print(_name + "\\tok")
    except WebhookVerificationError as _e:
        print(_name + "\\t" + _e.code)
`;

const GO_HARNESS = `package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func field(f string) string {
	if f == "~" {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(f)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(data), "\\n"), "\\n") {
		f := strings.Split(line, "\\t")
		var secrets []string
		for _, s := range strings.Split(f[5], ",") {
			secrets = append(secrets, field(s))
		}
		now, _ := strconv.ParseInt(f[6], 10, 64)
		tolerance, _ := strconv.ParseInt(f[7], 10, 64)
		err := VerifyWebhook([]byte(field(f[1])), field(f[2]), field(f[3]), field(f[4]), secrets, time.Duration(tolerance)*time.Second, time.Unix(now, 0))
		var ve *VerificationError
		switch {
		case err == nil:
			fmt.Println(f[0] + "\\tok")
		case errors.As(err, &ve):
			fmt.Println(f[0] + "\\t" + ve.Code)
		default:
			panic(err)
		}
	}
}
`;

const JAVA_HARNESS = `import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

public class VectorsCheck {
    static String field(String f) {
        return f.equals("~") ? null : new String(Base64.getDecoder().decode(f), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            String[] f = line.split("\\t", -1);
            List<String> secrets = new ArrayList<>();
            for (String s : f[5].split(",")) secrets.add(field(s));
            try {
                WebhookVerifier.verify(Base64.getDecoder().decode(f[1]), field(f[2]), field(f[3]), field(f[4]), secrets, Long.parseLong(f[7]), Long.parseLong(f[6]));
                System.out.println(f[0] + "\\tok");
            } catch (WebhookVerifier.VerificationException e) {
                System.out.println(f[0] + "\\t" + e.code);
            }
        }
    }
}
`;

const PHP_HARNESS = `<?php
require __DIR__ . '/webhook.php';
$field = fn (string $f): ?string => $f === '~' ? null : base64_decode($f, true);
foreach (file($argv[1], FILE_IGNORE_NEW_LINES) as $line) {
    [$name, $body, $sig, $ts, $prev, $secrets, $now, $tol] = explode("\\t", $line);
    try {
        verify_webhook(base64_decode($body, true), $field($sig), $field($ts), $field($prev), array_map($field, explode(',', $secrets)), (int) $tol, (int) $now);
        echo "$name\\tok\\n";
    } catch (WebhookVerificationException $e) {
        echo "$name\\t{$e->reason}\\n";
    }
}
`;

const RUBY_HARNESS = `require_relative "webhook"

field = ->(f) { f == "~" ? nil : f.unpack1("m0").force_encoding("UTF-8") }
File.readlines(ARGV[0], chomp: true).each do |line|
  name, body, sig, ts, prev, secrets, now, tol = line.split("\\t", -1)
  begin
    verify_webhook(body.unpack1("m0"), field.(sig), field.(ts), field.(prev), secrets.split(",").map(&field), tolerance: Integer(tol), now: Integer(now))
    puts "#{name}\\tok"
  rescue WebhookVerificationError => e
    puts "#{name}\\t#{e.code}"
  end
end
`;

const NODE_HARNESS = `const { readFileSync } = require('node:fs');
const { verifyWebhook, WebhookVerificationError } = require('./webhook.js');

const field = (f) => (f === '~' ? undefined : Buffer.from(f, 'base64').toString('utf8'));
for (const line of readFileSync(process.argv[2], 'utf8').split('\\n').filter((l) => l)) {
  const [name, body, sig, ts, prev, secrets, now, tol] = line.split('\\t');
  try {
    verifyWebhook(Buffer.from(body, 'base64'), field(sig), field(ts), field(prev), secrets.split(',').map(field), Number(tol), Number(now));
    console.log(name + '\\tok');
  } catch (e) {
    if (!(e instanceof WebhookVerificationError)) throw e;
    console.log(name + '\\t' + e.code);
  }
}
`;

export const LANGUAGES: Language[] = [
  {
    name: 'Node',
    fence: 'js',
    probes: [[process.execPath, '--version']],
    prepare: (dir, snippet, cases) => {
      writeFileSync(join(dir, 'webhook.js'), snippet);
      writeFileSync(join(dir, 'check.js'), NODE_HARNESS);
      return [[process.execPath, 'check.js', cases]];
    },
  },
  {
    name: 'Python',
    fence: 'python',
    probes: [['python3', '--version']],
    prepare: (dir, snippet, cases) => {
      writeFileSync(join(dir, 'check.py'), snippet + PYTHON_HARNESS);
      return [['python3', 'check.py', cases]];
    },
  },
  {
    name: 'Go',
    fence: 'go',
    probes: [['go', 'version']],
    prepare: (dir, snippet, cases) => {
      writeFileSync(join(dir, 'go.mod'), 'module vectors\n\ngo 1.19\n');
      writeFileSync(join(dir, 'webhook.go'), snippet.replace(/^package webhook$/m, 'package main'));
      writeFileSync(join(dir, 'main.go'), GO_HARNESS);
      return [['go', 'run', '.', cases]];
    },
  },
  {
    name: 'Java',
    fence: 'java',
    probes: [
      ['javac', '-version'],
      ['java', '-version'],
    ],
    prepare: (dir, snippet, cases) => {
      writeFileSync(join(dir, 'WebhookVerifier.java'), snippet);
      writeFileSync(join(dir, 'VectorsCheck.java'), JAVA_HARNESS);
      return [
        ['javac', '-Xlint:all', '-Werror', '-d', 'out', 'WebhookVerifier.java', 'VectorsCheck.java'],
        ['java', '-cp', 'out', 'VectorsCheck', cases],
      ];
    },
  },
  {
    name: 'PHP',
    fence: 'php',
    probes: [['php', '--version']],
    prepare: (dir, snippet, cases) => {
      writeFileSync(join(dir, 'webhook.php'), snippet);
      writeFileSync(join(dir, 'check.php'), PHP_HARNESS);
      return [['php', '-d', 'error_reporting=E_ALL', '-d', 'display_errors=stderr', 'check.php', cases]];
    },
  },
  {
    name: 'Ruby',
    fence: 'ruby',
    probes: [['ruby', '--version']],
    prepare: (dir, snippet, cases) => {
      writeFileSync(join(dir, 'webhook.rb'), snippet);
      writeFileSync(join(dir, 'check.rb'), RUBY_HARNESS);
      return [['ruby', '-w', 'check.rb', cases]];
    },
  },
];

/** Why `lang` cannot run here, or undefined when it can. */
export function missingToolchain(lang: Language): string | undefined {
  for (const [cmd, ...args] of lang.probes) {
    const r = spawnSync(cmd!, args, { stdio: 'ignore', timeout: 20_000 });
    if (r.error || r.status !== 0) return `${cmd} is not installed`;
  }
  return undefined;
}

export interface SnippetRun {
  /** Case name → `ok` or error code, as the snippet printed. */
  results: Record<string, string>;
  /** Everything the last command wrote to stderr (warnings included). */
  stderr: string;
}

/** Runs `snippet` of `lang` over `cases` in a fresh directory. */
export function runSnippet(lang: Language, snippet: string, cases: VectorCase[]): SnippetRun {
  const dir = mkdtempSync(join(tmpdir(), `psync-snippet-${lang.fence}-`));
  try {
    writeFileSync(join(dir, 'cases.tsv'), casesTsv(cases));
    const commands = lang.prepare(dir, snippet, join(dir, 'cases.tsv'));
    let stdout = '';
    let stderr = '';
    for (const [cmd, ...args] of commands) {
      const r = spawnSync(cmd!, args, {
        cwd: dir,
        encoding: 'utf8',
        timeout: 180_000,
        env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
      });
      if (r.error) throw r.error;
      if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
      stdout = r.stdout;
      stderr = r.stderr;
    }
    const results: Record<string, string> = {};
    for (const line of stdout.split('\n').filter((l) => l)) {
      const [name, result] = line.split('\t');
      results[name!] = result!;
    }
    return { results, stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
