'use client';
/** A modal on the native <dialog>: focus is trapped, Escape closes, the page behind is inert. */
import { useEffect, useRef, type ReactNode } from 'react';

export function Dialog({ title, onClose, children, testId }: { title: string; onClose(): void; children: ReactNode; testId: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={`${testId}-title`} data-testid={testId} onClose={onClose} onCancel={onClose}>
      <div className="dialog-head">
        <h2 id={`${testId}-title`}>{title}</h2>
        <button type="button" className="button small" onClick={onClose} aria-label="Close dialog">
          Close
        </button>
      </div>
      {children}
    </dialog>
  );
}
