'use client';
/** Page frame: navigation, who is signed in, sign-out, and the connection banner. */
import Link from 'next/link';
import { usePathname, useRouter } from 'next/navigation';
import { useState, type ReactNode } from 'react';
import { useIdentity } from './identity';
import { describeError } from './query-state';
import { useSummary } from './use-summary';
import { REFRESH_INTERVAL_MILLIS, useNow } from './live';
import { HistoryProvider } from './history';

const NAV = [
  { href: '/', label: 'Overview' },
  { href: '/locks', label: 'Locks' },
  { href: '/leaders', label: 'Leaders' },
  { href: '/contention', label: 'Contention' },
  { href: '/waits', label: 'Waits' },
  { href: '/sessions', label: 'Sessions' },
  { href: '/audit', label: 'Audit' },
] as const;

export function Shell({ children }: { children: ReactNode }) {
  const pathname = usePathname();
  return (
    <HistoryProvider>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand" aria-label="Holdfast console home">
          Holdfast
        </Link>
        <nav aria-label="Console sections" className="nav">
          {NAV.map((item) => {
            const active = item.href === '/' ? pathname === '/' : pathname.startsWith(item.href);
            return (
              <Link key={item.href} href={item.href} className={active ? 'nav-link active' : 'nav-link'} aria-current={active ? 'page' : undefined}>
                {item.label}
              </Link>
            );
          })}
        </nav>
        <WhoAmI />
      </header>
      <ConnectionBanner />
      <main id="main" className="main" tabIndex={-1}>
        {children}
      </main>
    </HistoryProvider>
  );
}

function WhoAmI() {
  const identity = useIdentity();
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  async function signOut() {
    setBusy(true);
    await fetch('/api/auth', { method: 'DELETE' }).catch(() => undefined);
    router.replace('/signin?signedOut=1');
    router.refresh();
  }
  return (
    <div className="whoami" data-testid="whoami">
      <span>
        Signed in as <strong data-testid="whoami-name">{identity.name}</strong>{' '}
        <span className={`role role-${identity.role}`} data-testid="whoami-role">
          {identity.role === 'unknown' ? 'role not reported' : identity.role}
        </span>
      </span>
      <button type="button" className="button small" onClick={signOut} disabled={busy}>
        Sign out
      </button>
    </div>
  );
}

function ConnectionBanner() {
  const { error, dataUpdatedAt, isError } = useSummary();
  const now = useNow();
  if (!isError) return null;
  const { title, detail, signIn } = describeError(error);
  const age = dataUpdatedAt > 0 ? Math.floor((now - dataUpdatedAt) / 1000) : null;
  return (
    <div className="banner banner-error" role="alert" data-testid="connection-banner">
      <strong>{title}.</strong> {detail}
      {age !== null ? ` Figures on screen are from ${age} s ago.` : ''}
      {!signIn ? ` Next try within ${REFRESH_INTERVAL_MILLIS / 1000} s.` : ' '}
      {signIn ? (
        <Link href="/signin" className="banner-link">
          Sign in again
        </Link>
      ) : null}
    </div>
  );
}
