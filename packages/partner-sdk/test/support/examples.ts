/**
 * TypeScript examples of the documentation, run by the tests as written: each is
 * written to a file of its own (so that Jest loads it, the SDK import resolving to the
 * package's source through the root jest.config.js) and type-checked with the root
 * tsconfig.json (whose `paths` resolve the SDK import the same way).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { codeBlocks } from './snippets';

const ROOT = join(__dirname, '..', '..', '..', '..');

export interface Example {
  /** The file the example was written to. */
  file: string;
  /** Type errors of the example, as text (empty when it type-checks). */
  typeErrors(): string[];
  /** Removes the file. */
  remove(): void;
}

/** The `ts` blocks of the markdown file at `path` (relative to the repository root), each written to a temporary file. */
export function tsExamples(path: string): Example[] {
  return codeBlocks(readFileSync(join(ROOT, path), 'utf8'), 'ts').map((block) => {
    const dir = mkdtempSync(join(tmpdir(), 'psync-example-'));
    const file = join(dir, 'example.ts');
    writeFileSync(file, block);
    return {
      file,
      typeErrors: () => {
        const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
        const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
        const program = ts.createProgram([file], { ...options, noEmit: true, rootDir: undefined });
        return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  });
}
