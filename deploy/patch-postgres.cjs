#!/usr/bin/env node
/**
 * Patches postgres.js 3.4.9 (node_modules/postgres) against a process crash when a
 * connection dies with a small write pending: `write()` defers writes under 1 KiB with
 * setImmediate(nextWrite); if the socket closes first, `closed()` sets `socket = null`
 * and clears the immediate without resetting `nextWriteTimer`, and the next
 * `nextWrite` throws `TypeError: Cannot read properties of null (reading 'write')` from
 * an immediate callback — uncatchable, the process exits. (Upstream: porsager/postgres#1154
 * and porsager/postgres#1208, unreleased pull requests #1168/#1176/#1209 there.) A database restart
 * under load hits it (test/platform/database-outage.test.ts; the deterministic repro is
 * test/kit/postgres-closed-socket.test.ts).
 *
 * The fix, in both builds (src/ for ESM, cjs/src/ for require):
 * - nextWrite, when the socket is gone, drops the buffered bytes, resets the timer and
 *   rejects what is waiting on the connection with CONNECTION_CLOSED (a query sent on
 *   a reserved connection whose backend died would otherwise wait for ever; on a pooled
 *   one, closed() has already rejected them and this finds nothing left);
 * - terminate() and closed() reset `nextWriteTimer` and `chunk` after clearing the
 *   immediate, so a reused connection object can schedule writes again.
 *
 * Why a script and not patch-package: one dependency less and no install-time hook on
 * dependencies (npm here runs no dependency install scripts); this runs from the root
 * package's `prepare` (npm ci, npm install) and from deploy/Dockerfile's build stage,
 * is idempotent, and refuses loudly if postgres.js changed (a new version: check
 * whether upstream fixed it, then drop or adapt this file).
 */
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..', 'node_modules', 'postgres');
const MARK = '/* psync: closed-socket guard */';

const edits = [
  {
    from: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    to: `  function nextWrite(fn) {\n    ${MARK}\n    if (!socket) {\n      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      return false\n    }\n    const x = socket.write(chunk, fn)`,
  },
  {
    from: "      error(Errors.connection('CONNECTION_DESTROYED', options))\n\n    clearImmediate(nextWriteTimer)\n",
    to: "      error(Errors.connection('CONNECTION_DESTROYED', options))\n\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n",
  },
  {
    from: '    incomings = null\n    clearImmediate(nextWriteTimer)\n',
    to: '    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n',
  },
];

function patch(file) {
  const text = readFileSync(file, 'utf8');
  if (text.includes(MARK)) return 'already patched';
  let out = text;
  for (const e of edits) {
    if (!out.includes(e.from)) {
      throw new Error(`${file}: postgres.js is not the version this patch was written for (missing: ${JSON.stringify(e.from.slice(0, 60))}); see deploy/patch-postgres.cjs`);
    }
    out = out.replace(e.from, e.to);
  }
  writeFileSync(file, out);
  return 'patched';
}

const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
for (const rel of ['src/connection.js', 'cjs/src/connection.js']) {
  const result = patch(join(root, rel));
  process.stdout.write(`postgres ${version} ${rel}: ${result}\n`);
}
