/**
 * The console's shell: the sign-in form until a session exists, then the header
 * (workspace, environment, token expiry, requests left, sign out), the navigation and
 * the page the hash route names.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { PartnerClient } from '../../packages/partner-sdk/src/client';
import type { RateLimitInfo } from '../../packages/partner-sdk/src/rate-limit';
import { type Console, ConsoleContext } from './context';
import { CalendarPage } from './pages/calendar';
import { EventsPage } from './pages/events';
import { OverviewPage } from './pages/overview';
import { PropertiesPage } from './pages/properties';
import { PropertyPage } from './pages/property';
import { RequestsPage } from './pages/requests';
import { WebhooksPage } from './pages/webhooks';
import { href, type Route, useRoute } from './route';
import { keepFresh, type Session } from './session';
import { SignIn } from './sign-in';
import { Badge, Time } from './ui';

const PAGES = [
  { name: 'Overview', path: 'overview' },
  { name: 'Properties', path: 'properties' },
  { name: 'Calendar', path: 'calendar' },
  { name: 'Webhooks', path: 'webhooks' },
  { name: 'Requests', path: 'requests' },
  { name: 'Events', path: 'events' },
] as const;

function Page({ route }: { route: Route }) {
  const [first = 'overview', second] = route.parts;
  switch (first) {
    case 'properties':
      return second === undefined ? <PropertiesPage route={route} /> : <PropertyPage providerId={second} />;
    case 'calendar':
      return <CalendarPage route={route} />;
    case 'webhooks':
      return <WebhooksPage route={route} />;
    case 'requests':
      return <RequestsPage route={route} />;
    case 'events':
      return <EventsPage route={route} />;
    default:
      return <OverviewPage />;
  }
}

function RateLimitLine({ rate }: { rate: RateLimitInfo | undefined }) {
  if (!rate) return <span class="muted">Requests left: shown after the first call</span>;
  return (
    <span data-testid="rate-limit">
      Requests left: <strong>{rate.remaining}</strong> of {rate.limit}, resets in {Math.ceil(rate.resetSeconds / 60)} min
    </span>
  );
}

function Shell({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const route = useRoute();
  const [token, setToken] = useState(session.token);
  const [rate, setRate] = useState<RateLimitInfo | undefined>(session.client.rateLimit);
  const [refreshError, setRefreshError] = useState<string | undefined>();
  const heading = useRef<HTMLDivElement>(null);

  useEffect(
    () =>
      keepFresh(
        session,
        (t) => {
          setToken(t);
          setRefreshError(undefined);
        },
        (e) => setRefreshError(e instanceof Error ? e.message : String(e)),
      ),
    [session],
  );

  // After navigation, focus moves to the page so keyboard and screen-reader users start there.
  const current = route.parts[0] ?? 'overview';
  useEffect(() => {
    heading.current?.focus();
    const name = PAGES.find((p) => p.path === current)?.name ?? 'Overview';
    document.title = `${route.parts[1] ? `${route.parts[1]} · ` : ''}${name} · Partner Sync console`;
  }, [current, route.parts[1]]);

  const api = useCallback(
    async <T,>(call: (client: PartnerClient) => Promise<T>): Promise<T> => {
      try {
        return await call(session.client);
      } finally {
        if (!session.ended) setRate(session.client.rateLimit);
      }
    },
    [session],
  );
  const value = useMemo<Console>(() => ({ session, api }), [session, api]);

  return (
    <ConsoleContext.Provider value={value}>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), heading.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <p class="brand">Partner Sync console</p>
        <dl class="facts">
          <div>
            <dt>Workspace</dt>
            <dd>
              <code data-testid="workspace-id">{token.workspaceId}</code>
            </dd>
          </div>
          <div>
            <dt>Environment</dt>
            <dd>{token.sandbox ? <Badge tone="info">sandbox</Badge> : <Badge tone="warn">production</Badge>}</dd>
          </div>
          <div>
            <dt>Token expires</dt>
            <dd>
              <Time at={token.expiresAt.toISOString()} />
            </dd>
          </div>
          <div>
            <dt>Quota</dt>
            <dd>
              <RateLimitLine rate={rate} />
            </dd>
          </div>
        </dl>
        <button type="button" class="secondary" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      {refreshError && (
        <p class="note error" role="alert">
          The access token could not be renewed: {refreshError}. Sign out and in again.
        </p>
      )}
      {!token.sandbox && (
        <div class="note warn banner" role="note">
          <strong>Production workspace.</strong> The contract is published here but not enabled: every call is authenticated and validated in full and then answered{' '}
          <code>501 not_enabled</code>. Nothing is written and nothing is delivered, so this console is read-only here and its pages show that answer; test events, resends and
          receiver checks are sandbox features.
        </div>
      )}
      <nav aria-label="Console">
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              <a href={href([p.path])} aria-current={current === p.path ? 'page' : undefined}>
                {p.name}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main">
        <div ref={heading} tabIndex={-1} class="page-focus">
          <Page route={route} />
        </div>
      </main>
    </ConsoleContext.Provider>
  );
}

export function App() {
  const [session, setSession] = useState<Session | undefined>();
  const [notice, setNotice] = useState<string | undefined>();
  if (!session) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          setNotice(undefined);
          setSession(s);
        }}
      />
    );
  }
  return (
    <Shell
      session={session}
      onSignOut={() => {
        // Every request and timer of the session stops here, and its client is let go (session.ts).
        session.end();
        setSession(undefined);
        setNotice('Signed out. The key and the token are gone from this page.');
        window.location.hash = '';
      }}
    />
  );
}
