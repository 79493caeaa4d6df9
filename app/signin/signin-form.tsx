'use client';
/**
 * Sign-in: paste an admin token, or open the link `npm start` prints
 * (`/signin?code=…`). The link carries a one-time code, not a token: the console
 * exchanges it (once, within minutes) for its sealed session cookie. The code is
 * removed from the address bar at once; a pasted token is posted once and then
 * lives only in the httpOnly cookie.
 */
import { useRouter, useSearchParams } from 'next/navigation';
import { useEffect, useRef, useState, type FormEvent } from 'react';

export function SignInForm() {
  const router = useRouter();
  const params = useSearchParams();
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const linkTried = useRef(false);

  async function signIn(credential: { token: string } | { code: string }) {
    setBusy(true);
    setError(null);
    try {
      const response = await fetch('/api/auth', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(credential),
      });
      if (response.ok) {
        router.replace('/');
        router.refresh();
        return;
      }
      const body = (await response.json().catch(() => null)) as { error?: { message?: string } } | null;
      setError(body?.error?.message ?? `sign-in failed (${response.status})`);
    } catch {
      setError('the console is not answering');
    }
    setBusy(false);
  }

  useEffect(() => {
    if (linkTried.current) return;
    const code = params.get('code');
    // An old-style link with a token in it: never used, only taken out of the address bar.
    const legacyToken = params.has('token');
    if (!code && !legacyToken) return;
    linkTried.current = true;
    window.history.replaceState(null, '', '/signin');
    if (code) void signIn({ code });
    else setError('sign-in links no longer carry tokens; paste your token below');
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [params]);

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (token.trim()) void signIn({ token: token.trim() });
  }

  return (
    <form className="card signin-card" onSubmit={onSubmit} aria-describedby="signin-help">
      {params.get('signedOut') ? <p role="status">You are signed out.</p> : null}
      <label htmlFor="token">Admin token</label>
      <input
        id="token"
        name="token"
        type="password"
        autoComplete="off"
        autoFocus
        value={token}
        onChange={(event) => setToken(event.target.value)}
        placeholder="paste a viewer or operator token"
      />
      <p id="signin-help" className="muted">
        A viewer sees everything; an operator can also force-revoke locks and kill sessions. On the embedded default, the
        server writes an operator token to <code>.holdfast/admin-tokens.json</code> and <code>npm start</code> prints a
        one-time sign-in link (valid once, for five minutes).
      </p>
      {error ? (
        <p className="form-error" role="alert" data-testid="signin-error">
          {error}
        </p>
      ) : null}
      <button type="submit" className="button primary" disabled={busy || token.trim().length === 0}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
