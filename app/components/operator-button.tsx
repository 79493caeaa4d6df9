'use client';
/**
 * A destructive operator action (revoke, kill). A viewer sees it disabled, with what they would
 * need to use it: the server refuses a viewer anyway, and a button that only fails teaches nothing.
 */
import type { ReactNode } from 'react';
import { useCanAct } from './identity';

export function OperatorButton({
  onClick,
  label,
  title,
  viewerTitle,
  small = false,
  children,
}: {
  onClick(): void;
  /** The accessible name, when the visible text alone does not say what it acts on. */
  label?: string;
  /** The tooltip for an operator. */
  title?: string;
  /** Why a viewer cannot use it. */
  viewerTitle: string;
  small?: boolean;
  children: ReactNode;
}) {
  const canAct = useCanAct();
  return (
    <button
      type="button"
      className={small ? 'button small danger-outline' : 'button danger-outline'}
      disabled={!canAct}
      onClick={onClick}
      title={canAct ? title : viewerTitle}
      aria-label={label}
    >
      {children}
    </button>
  );
}

export const VIEWERS_CANNOT_REVOKE = 'Viewers cannot revoke; sign in with an operator token';
