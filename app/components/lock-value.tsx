'use client';
/**
 * A holder's value, as text (lib/lock-value.ts says why and how invisible characters show). A long
 * value is cut in the cell and opens in full below it; nothing of it is ever parsed as markup.
 */
import { previewValue, visibleMultilineValue } from '../lib/lock-value';

export function LockValue({ value }: { value: string | undefined }) {
  if (value === undefined) return <span className="muted">—</span>;
  if (value === '') return <span className="muted" data-testid="holder-value" data-empty="true">(empty)</span>;
  const preview = previewValue(value);
  if (!preview.cut) {
    return (
      <span className="mono lock-value" data-testid="holder-value">
        {preview.text}
      </span>
    );
  }
  return (
    <details className="lock-value" data-testid="holder-value" data-cut="true">
      <summary>
        <span className="mono">{preview.text}</span> <span className="muted small">show all {preview.codePoints} characters</span>
      </summary>
      <pre className="mono lock-value-full" data-testid="holder-value-full">
        {visibleMultilineValue(value)}
      </pre>
    </details>
  );
}
