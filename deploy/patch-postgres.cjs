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
 * A second patch, for a server that stops taking writes under open connections (a
 * failover: the old primary demoted, a standby reached, `default_transaction_read_only`
 * turned on; docs/operations.md "PostgreSQL high availability"):
 * - a connection that received SQLSTATE 25006 (read_only_sql_transaction), or whose
 *   server reports it no longer is what `target_session_attrs` read-write or primary
 *   asks for (PostgreSQL 14+ reports `default_transaction_read_only` and
 *   `in_hot_standby` when they change), ends once it is idle again (after the failed
 *   statement, or after the transaction's rollback) instead of going back to the
 *   pool, so readers leave a demoted primary too, and the next query connects afresh and, with a
 *   multi-host URL, postgres.js looks for the host `target_session_attrs` asks for
 *   (with one host behind a name that follows the primary, it finds the new one). Not
 *   for `target_session_attrs` read-only, standby or prefer-standby, whose sessions
 *   are read-only on purpose; a connection reserved with sql.reserve() is left to its
 *   holder until it is released;
 * - `target_session_attrs=read-write` refuses a hot standby as libpq does (a server in
 *   recovery reports `default_transaction_read_only` off, which postgres.js alone took
 *   for writable: porsager/postgres#815).
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

const patches = [
  {
    mark: '/* psync: closed-socket guard */',
    edits: (MARK) => [
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
    ],
  },
  {
    mark: '/* psync: read-only server drop */',
    edits: (MARK) => [
      {
        from: '    , terminated = false\n',
        to: `    , terminated = false\n    , unwritable = false ${MARK}\n`,
      },
      {
        from: '    terminated = false\n    backendParameters = {}\n',
        to: '    terminated = false\n    unwritable = false\n    backendParameters = {}\n',
      },
      {
        from: '      errorResponse = Errors.postgres(parseError(x))\n',
        to:
          '      errorResponse = Errors.postgres(parseError(x))\n' +
          "      errorResponse.code === '25006' && !['read-only', 'standby', 'prefer-standby'].includes(target_session_attrs) && (unwritable = true)\n",
      },
      // end(), as the idle and lifetime timers do: the pool takes the connection out of
      // its queues at once, then back as closed (reconnecting on demand) once the socket is.
      {
        from: '          : (connection.reserved = null, onopen(connection))\n',
        to: '          : (connection.reserved = null, unwritable ? end() : onopen(connection))\n',
      },
      {
        from: '      : ending\n        ? terminate()\n        : onopen(connection)\n',
        to: '      : ending\n        ? terminate()\n        : unwritable\n          ? end()\n          : onopen(connection)\n',
      },
      {
        from: '    backendParameters[k] = v\n',
        to: "    backendParameters[k] = v\n    if ((target_session_attrs === 'read-write' || target_session_attrs === 'primary') && tryNext(target_session_attrs, backendParameters)) unwritable = true\n",
      },
      {
        from: "      (x === 'read-write' && xs.default_transaction_read_only === 'on') ||\n",
        to: "      (x === 'read-write' && (xs.default_transaction_read_only === 'on' || xs.in_hot_standby === 'on')) ||\n",
      },
    ],
  },
];

function patch(file) {
  let out = readFileSync(file, 'utf8');
  const done = [];
  for (const { mark, edits } of patches) {
    if (out.includes(mark)) continue;
    for (const e of edits(mark)) {
      if (!out.includes(e.from)) {
        throw new Error(`${file}: postgres.js is not the version this patch was written for (missing: ${JSON.stringify(e.from.slice(0, 60))}); see deploy/patch-postgres.cjs`);
      }
      out = out.replace(e.from, e.to);
    }
    done.push(mark);
  }
  if (done.length === 0) return 'already patched';
  writeFileSync(file, out);
  return `patched ${done.join(', ')}`;
}

const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
for (const rel of ['src/connection.js', 'cjs/src/connection.js']) {
  const result = patch(join(root, rel));
  process.stdout.write(`postgres ${version} ${rel}: ${result}\n`);
}
