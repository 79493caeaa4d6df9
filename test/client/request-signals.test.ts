/**
 * The reuse of per-request timeout controllers (client/request-signals.ts): only
 * one that is as good as new — never aborted, no listener left on it — comes back.
 */
import { describe, expect, it } from 'vitest';
import { returnRequestController, takeRequestController } from '../../client/request-signals.js';

describe('request timeout controllers', () => {
  it('a clean controller handed back is the next one taken, still unaborted', () => {
    const first = takeRequestController();
    const onAbort = (): void => {};
    first.signal.addEventListener('abort', onAbort);
    first.signal.removeEventListener('abort', onAbort);
    returnRequestController(first);
    const next = takeRequestController();
    expect(next).toBe(first);
    expect(next.signal.aborted).toBe(false);
  });

  it('one that aborted, or that a listener still holds, is never handed out again', () => {
    const fired = takeRequestController();
    fired.abort(new Error('timed out'));
    returnRequestController(fired);
    const held = takeRequestController();
    expect(held).not.toBe(fired);
    held.signal.addEventListener('abort', () => {});
    returnRequestController(held);
    const next = takeRequestController();
    expect(next).not.toBe(fired);
    expect(next).not.toBe(held);
    expect(next.signal.aborted).toBe(false);
  });
});
