/** Small pieces every page uses: how a failure, a time, a state and "loading" look. */
import type { ComponentChildren } from 'preact';
import { ProblemError, TokenExchangeError, UnexpectedResponseError } from '../../packages/partner-sdk/src/errors';

/** A failed call as the partner should read it: code, status, detail and the `instance` to quote. */
export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined) return null;
  if (error instanceof ProblemError) {
    return (
      <div class="note error" role="alert">
        <p>
          <strong>
            {error.status} {error.code}
          </strong>
          : {error.detail}
        </p>
        {error.fields.length > 0 && (
          <ul>
            {error.fields.map((f) => (
              <li key={`${f.field}:${f.code}`}>
                <code>{f.field}</code>: {f.code}
              </li>
            ))}
          </ul>
        )}
        {error.retryAfterSeconds !== undefined && <p>Try again in {error.retryAfterSeconds} s.</p>}
        <p class="instance">
          Instance: <code>{error.instance}</code>
        </p>
      </div>
    );
  }
  if (error instanceof TokenExchangeError) {
    return (
      <div class="note error" role="alert">
        <p>
          <strong>{error.status}</strong>: {error.reason}
        </p>
      </div>
    );
  }
  const text = error instanceof UnexpectedResponseError ? `Unexpected answer ${error.status}` : error instanceof Error ? error.message : String(error);
  return (
    <div class="note error" role="alert">
      <p>{text}</p>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** An instant as the API states it (UTC), readable and machine-readable. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  return <time dateTime={at}>{at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>;
}

/** A state word with its colour; the word itself carries the meaning. */
export function Badge({ tone, children }: { tone: 'good' | 'bad' | 'warn' | 'info'; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

/** A table's header row: one column header per name. */
export function HeadRow({ cols }: { cols: readonly string[] }) {
  return (
    <thead>
      <tr>
        {cols.map((c) => (
          <th scope="col" key={c}>
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}
