'use client';
/** Kill a session: same safety as force-revoke (reason required, the session id typed to confirm, audited). */
import Link from 'next/link';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import type { SessionInfo } from '../lib/api-types';
import { postJson } from '../lib/client/api';
import { formatAbsolute } from '../lib/format';
import { Dialog } from './dialog';
import { useIdentity } from './identity';
import { ActionError, auditLink } from './revoke-dialog';

interface KillResult {
  auditId?: string;
  outcome?: string;
}

export function KillDialog({ session, onClose }: { session: SessionInfo; onClose(): void }) {
  const identity = useIdentity();
  const queryClient = useQueryClient();
  const [reason, setReason] = useState('');
  const [typed, setTyped] = useState('');
  const mutation = useMutation({
    mutationFn: () =>
      postJson<KillResult | undefined>(`/api/sessions/${encodeURIComponent(session.sessionId)}/kill`, { reason: reason.trim(), confirmId: typed }, identity.csrfToken),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['sessions'] });
      await queryClient.invalidateQueries({ queryKey: ['locks'] });
      await queryClient.invalidateQueries({ queryKey: ['audit'] });
    },
  });
  const canSubmit = identity.role !== 'viewer' && reason.trim().length > 0 && typed === session.sessionId && !mutation.isPending && !mutation.isSuccess;
  function submit(event: FormEvent) {
    event.preventDefault();
    if (canSubmit) mutation.mutate();
  }
  const result = mutation.data;
  return (
    <Dialog title="Kill session" onClose={onClose} testId="kill-dialog">
      <dl className="facts">
        <dt>Session</dt>
        <dd className="mono">{session.sessionId}</dd>
        <dt>Owner</dt>
        <dd>{session.owner || '—'}</dd>
        <dt>Locks held</dt>
        <dd>{session.lockCount}</dd>
        <dt>Last heartbeat</dt>
        <dd>{formatAbsolute(session.lastHeartbeatAt)}</dd>
      </dl>
      {mutation.isSuccess ? (
        <div className="outcome outcome-ok" role="status" data-testid="kill-outcome" data-outcome={result?.outcome ?? 'KILLED'}>
          <strong>{result?.outcome === 'NOT_FOUND' ? 'Nothing was killed: the session had already ended.' : 'Session killed.'}</strong> Its {session.lockCount} lock(s)
          are released.{' '}
          {result?.auditId ? (
            <Link href={auditLink(session.sessionId, result.auditId)} onClick={onClose}>
              Audit entry {result.auditId}
            </Link>
          ) : (
            <Link href={`/audit?target=${encodeURIComponent(session.sessionId)}`} onClick={onClose}>
              See the audit trail
            </Link>
          )}
        </div>
      ) : (
        <form onSubmit={submit} className="dialog-form">
          <p className="muted">Killing ends the session now and releases every lock it holds. Its owner finds out on its next heartbeat or renew.</p>
          <label htmlFor="kill-reason">Reason (required, goes to the audit trail)</label>
          <textarea id="kill-reason" rows={3} maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} />
          <label htmlFor="kill-confirm">
            Type the session id <span className="mono">{session.sessionId}</span> to confirm
          </label>
          <input id="kill-confirm" className="mono" value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" spellCheck={false} />
          {mutation.isError ? <ActionError error={mutation.error} /> : null}
          <div className="dialog-actions">
            <button type="button" className="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" className="button danger" disabled={!canSubmit}>
              {mutation.isPending ? 'Killing…' : 'Kill this session'}
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
