/**
 * The client's token watermark (client/watermark.ts) with multi-holder keys (issue 23 slice 2):
 * grants of one semaphore or shared key coexist, so sessions of one client may be answered in
 * another order than their tokens; a grant below the key's highest is stale only when the two
 * could not have coexisted, and a session's own grants of a key only rise.
 */
import { describe, expect, it } from 'vitest';
import { FencedOutError } from '../../client/errors.js';
import { MUTEX_HOLDING, requestedHolding } from '../../client/holding.js';
import { TokenWatermark } from '../../client/watermark.js';

const semaphore3 = requestedHolding({ limit: 3 });
const semaphore5 = requestedHolding({ limit: 5 });
const shared = requestedHolding({ mode: 'shared' });

describe('TokenWatermark', () => {
  it('admits permits of one semaphore (and shared holders) answered out of token order to different sessions', () => {
    const marks = new TokenWatermark();
    expect(marks.admit('sem', '12', 'a', semaphore3)).toBe('new');
    expect(marks.admit('sem', '11', 'b', semaphore3)).toBe('new');
    expect(marks.admit('rw', '22', 'a', shared)).toBe('new');
    expect(marks.admit('rw', '21', 'b', shared)).toBe('new');
  });

  it('refuses a grant below the highest when the two cannot coexist: either is a mutex, or another kind', () => {
    const marks = new TokenWatermark();
    marks.admit('m', '10', 'a', MUTEX_HOLDING);
    expect(() => marks.admit('m', '9', 'b', MUTEX_HOLDING)).toThrow(FencedOutError);
    expect(() => marks.admit('m', '9', 'b', semaphore3)).toThrow(FencedOutError);
    marks.admit('sem', '20', 'a', semaphore3);
    expect(() => marks.admit('sem', '19', 'b', MUTEX_HOLDING)).toThrow(FencedOutError);
    expect(() => marks.admit('sem', '19', 'b', semaphore5)).toThrow(FencedOutError);
    expect(() => marks.admit('sem', '19', 'b', shared)).toThrow(FencedOutError);
    // A refused grant records nothing: the key's highest is still 20, a permit.
    expect(marks.admit('sem', '18', 'c', semaphore3)).toBe('new');
  });

  it("a session's own grants of a key only rise; the same token again is `seen` (an existing grant handed back)", () => {
    const marks = new TokenWatermark();
    marks.admit('sem', '30', 'a', semaphore3);
    expect(marks.admit('sem', '30', 'a', semaphore3)).toBe('seen');
    marks.admit('sem', '32', 'b', semaphore3);
    expect(marks.admit('sem', '30', 'a', semaphore3)).toBe('seen');
    expect(() => marks.admit('sem', '29', 'a', semaphore3)).toThrow(FencedOutError);
  });
});
