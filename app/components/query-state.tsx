'use client';
/** Loading, empty and error states, worded for someone paged at 3 a.m. */
import Link from 'next/link';
import type { ReactNode } from 'react';
import { ApiError } from '../lib/client/api';

export function Loading({ what }: { what: string }) {
  return (
    <div className="state state-loading" role="status" aria-live="polite">
      Loading {what}…
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return (
    <div className="state state-empty" role="status">
      {children}
    </div>
  );
}

export function describeError(error: unknown): { title: string; detail: string; signIn: boolean } {
  if (error instanceof ApiError) {
    if (error.code === 'SERVER_UNREACHABLE' || error.code === 'BAD_UPSTREAM_RESPONSE') {
      return { title: 'Lock server unreachable', detail: `${error.message}. Retrying on its own; the page recovers when the server answers.`, signIn: false };
    }
    if (error.code === 'CONSOLE_UNREACHABLE') {
      return { title: 'Console unreachable', detail: 'The console process is not answering. Retrying on its own.', signIn: false };
    }
    if (error.status === 401) {
      return { title: 'Signed out', detail: 'The lock server no longer accepts your token (expired, rotated or removed). Sign in again.', signIn: true };
    }
    if (error.status === 403) {
      return { title: 'Not allowed', detail: error.message, signIn: false };
    }
    return { title: `Request failed: ${error.code}`, detail: error.message, signIn: false };
  }
  return { title: 'Something went wrong', detail: error instanceof Error ? error.message : String(error), signIn: false };
}

export function ErrorState({ error, what }: { error: unknown; what: string }) {
  const { title, detail, signIn } = describeError(error);
  return (
    <div className="state state-error" role="alert" data-testid="error-state">
      <strong>{title}</strong>
      <span>
        Could not load {what}. {detail}
      </span>
      {signIn ? (
        <Link className="button" href="/signin">
          Sign in again
        </Link>
      ) : null}
    </div>
  );
}
