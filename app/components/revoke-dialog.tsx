'use client';
/**
 * Force-revoke. Shows exactly the holder and fencing token the operator saw,
 * requires a reason and the key typed out, and sends that token as
 * expectedFencingToken: if someone else took the lock meanwhile, the server
 * answers TOKEN_MISMATCH and revokes nothing.
 */
import Link from 'next/link';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import type { LockInfo, LockOutcome } from '../lib/api-types';
import { ApiError, getJson, postJson } from '../lib/client/api';
import { formatAbsolute, formatRelative } from '../lib/format';
import { Dialog } from './dialog';
import { useIdentity } from './identity';

export function auditLink(target: string, auditId: string): string {
  return `/audit?target=${encodeURIComponent(target)}&highlight=${encodeURIComponent(auditId)}`;
}

export function RevokeDialog({ lock, onClose }: { lock: LockInfo; onClose(): void }) {
  const identity = useIdentity();
  const queryClient = useQueryClient();
  const [reason, setReason] = useState('');
  const [typedKey, setTypedKey] = useState('');
  const [current, setCurrent] = useState<LockInfo | null>(null);
  const seenToken = lock.fencingToken ?? '';
  const mutation = useMutation({
    mutationFn: () =>
      postJson<LockOutcome>(
        `/api/locks/${encodeURIComponent(lock.key)}/revoke`,
        { reason: reason.trim(), expectedFencingToken: seenToken, confirmKey: typedKey },
        identity.csrfToken,
      ),
    onSuccess: async (outcome) => {
      await queryClient.invalidateQueries({ queryKey: ['locks'] });
      await queryClient.invalidateQueries({ queryKey: ['lock', lock.key] });
      await queryClient.invalidateQueries({ queryKey: ['audit'] });
      if (outcome.outcome === 'TOKEN_MISMATCH') {
        setCurrent(await getJson<LockInfo>(`/api/locks/${encodeURIComponent(lock.key)}`).catch(() => null));
      }
    },
  });
  const reasonOk = reason.trim().length >= 1 && reason.trim().length <= 500;
  const keyOk = typedKey === lock.key;
  const canSubmit = identity.role !== 'viewer' && reasonOk && keyOk && !mutation.isPending && !mutation.isSuccess;

  function submit(event: FormEvent) {
    event.preventDefault();
    if (canSubmit) mutation.mutate();
  }

  return (
    <Dialog title="Force-revoke lock" onClose={onClose} testId="revoke-dialog">
      <dl className="facts">
        <dt>Key</dt>
        <dd className="mono" data-testid="revoke-key">
          {lock.key}
        </dd>
        <dt>Holder you saw</dt>
        <dd data-testid="revoke-holder">
          {lock.owner ?? 'unknown owner'} <span className="mono muted">session {lock.sessionId}</span>
        </dd>
        <dt>Fencing token</dt>
        <dd className="mono" data-testid="revoke-token">
          {seenToken}
        </dd>
        {lock.grantedAt ? (
          <>
            <dt>Held since</dt>
            <dd>
              {formatAbsolute(lock.grantedAt)} ({formatRelative(lock.grantedAt, Date.now())})
            </dd>
          </>
        ) : null}
      </dl>
      {mutation.isSuccess ? (
        <Outcome outcome={mutation.data} seenToken={seenToken} current={current} onClose={onClose} />
      ) : (
        <form onSubmit={submit} className="dialog-form">
          <p className="muted">
            Only this grant (token {seenToken}) is revoked. If the lock has changed hands since you opened this dialog, nothing is
            revoked. The holder&apos;s next renew or write with this token fails; its work may be half done.
          </p>
          <label htmlFor="revoke-reason">Reason (required, goes to the audit trail)</label>
          <textarea id="revoke-reason" value={reason} maxLength={500} rows={3} onChange={(e) => setReason(e.target.value)} placeholder="e.g. holder stuck since 02:40, incident INC-1234" />
          <label htmlFor="revoke-confirm">
            Type the key <span className="mono">{lock.key}</span> to confirm
          </label>
          <input id="revoke-confirm" value={typedKey} onChange={(e) => setTypedKey(e.target.value)} autoComplete="off" spellCheck={false} className="mono" />
          {typedKey.length > 0 && !keyOk ? <p className="form-hint">The typed key does not match yet.</p> : null}
          {mutation.isError ? <ActionError error={mutation.error} /> : null}
          <div className="dialog-actions">
            <button type="button" className="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" className="button danger" disabled={!canSubmit}>
              {mutation.isPending ? 'Revoking…' : 'Revoke this lock'}
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}

function Outcome({ outcome, seenToken, current, onClose }: { outcome: LockOutcome; seenToken: string; current: LockInfo | null; onClose(): void }) {
  const audit = (
    <Link href={auditLink(outcome.key, outcome.auditId)} data-testid="outcome-audit-link" onClick={onClose}>
      audit entry {outcome.auditId}
    </Link>
  );
  if (outcome.outcome === 'REVOKED') {
    return (
      <div className="outcome outcome-ok" role="status" data-testid="revoke-outcome" data-outcome="REVOKED">
        <strong>Revoked.</strong> Token {outcome.revokedFencingToken ?? seenToken} no longer holds <span className="mono">{outcome.key}</span>. Recorded as {audit}.
      </div>
    );
  }
  if (outcome.outcome === 'TOKEN_MISMATCH') {
    return (
      <div className="outcome outcome-warn" role="status" data-testid="revoke-outcome" data-outcome="TOKEN_MISMATCH">
        <strong>Nothing was revoked.</strong> The lock changed hands after you opened this dialog: you saw token {seenToken}
        {current?.held ? (
          <>
            , but it is now held by <strong>{current.owner ?? 'another owner'}</strong> with token <span className="mono">{current.fencingToken}</span>
          </>
        ) : (
          ', and that grant no longer holds'
        )}
        . The console only revokes the exact holder you saw, so the new holder was left alone. Check the new holder before
        revoking again. Recorded as {audit}.
      </div>
    );
  }
  return (
    <div className="outcome outcome-warn" role="status" data-testid="revoke-outcome" data-outcome={outcome.outcome}>
      <strong>Nothing was revoked.</strong> <span className="mono">{outcome.key}</span> was already free (released or expired) when the
      request arrived. Recorded as {audit}.
    </div>
  );
}

export function ActionError({ error }: { error: unknown }) {
  let text = error instanceof Error ? error.message : String(error);
  if (error instanceof ApiError) {
    if (error.status === 403) text = `Refused: ${error.message}`;
    else if (error.status === 401) text = 'Your token is no longer accepted; sign in again.';
    else if (error.code === 'SERVER_UNREACHABLE') text = `The lock server is unreachable; nothing was changed. ${error.message}`;
    else text = `${error.code}: ${error.message}`;
  }
  return (
    <p className="form-error" role="alert" data-testid="action-error">
      {text}
    </p>
  );
}
