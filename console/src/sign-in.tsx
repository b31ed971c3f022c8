/**
 * The sign-in form: the API key is exchanged at `POST /v1/token` and then lives only
 * in the session object (session.ts); the input is emptied at once and the browser is
 * asked not to remember it.
 */
import { useEffect, useState } from 'preact/hooks';
import { useAction } from './load';
import { Session } from './session';
import { ErrorNote } from './ui';

/** The API's base URL: the gateway that served this page (same origin, no CORS). */
function apiBase(): string {
  return `${window.location.origin}/v1`;
}

export function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Session) => void; notice?: string }) {
  const [key, setKey] = useState('');
  const action = useAction();
  useEffect(() => {
    document.title = 'Sign in · Partner Sync console';
  }, []);

  function submit(e: Event) {
    e.preventDefault();
    const apiKey = key.trim();
    if (!apiKey) {
      action.fail(new Error('Enter the API key of a sandbox or production workspace.'));
      return;
    }
    action.run(async () => {
      const session = await Session.open({ baseUrl: apiBase(), apiKey });
      setKey('');
      onSignedIn(session);
    });
  }

  return (
    <main id="main" class="sign-in">
      <h1>Partner Sync sandbox console</h1>
      <p>See your integration as the marketplace sees it: properties, calendars, webhook deliveries, your requests and the events feed.</p>
      {notice && (
        <p class="note info" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="api-key-help"
        />
        <p id="api-key-help" class="help">
          Kept in this page's memory only and sent only to <code>POST /v1/token</code>; reloading the page asks for it again.
        </p>
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <ErrorNote error={action.error} />
    </main>
  );
}
