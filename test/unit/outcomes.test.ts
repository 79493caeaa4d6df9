/**
 * exporter/outcomes.ts against the C3 error table: an answer the caller caused (every 4xx code) is a
 * correct answer of the service, so it never maps to `error` and never counts against the S1 SLO;
 * only 503 and 500 do. Pins the C4 outcome-mapping rows, FORBIDDEN and HOLD_LIMIT_REACHED included.
 */
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, ERROR_TABLE, type ErrorCode } from '../../contract/error-table.js';
import { isS1Bad, outcomeOf, type MeasuredRoute } from '../../exporter/outcomes.js';
import { lockRouteSchemas } from '../../lock/http/schemas/locks.js';

const ROUTES: MeasuredRoute[] = ['acquire', 'renew', 'release'];

/** The error codes a route's pinned schema says it answers (each response's description: "CODE: meaning; …"). */
function codesOf(route: MeasuredRoute): ErrorCode[] {
  const responses = lockRouteSchemas[route].response as Record<string, { description?: string }>;
  return Object.entries(responses)
    .filter(([status]) => Number(status) >= 400)
    .flatMap(([, schema]) => (schema.description ?? '').split('; ').map((part) => part.slice(0, part.indexOf(':'))))
    .filter((code): code is ErrorCode => (ERROR_CODES as string[]).includes(code));
}

describe('outcome of an answered L4 / L5 / L6', () => {
  it.each(ROUTES)('%s: no 4xx code its schema answers is an error, nor bad for S1', (route) => {
    const codes = codesOf(route);
    expect(codes).toContain('VALIDATION_FAILED');
    for (const code of codes) {
      const { status } = ERROR_TABLE[code];
      if (status >= 500) continue;
      const outcome = outcomeOf(route, status, code);
      expect({ code, outcome }).not.toEqual({ code, outcome: 'error' });
      expect({ code, bad: isS1Bad(outcome) }).toEqual({ code, bad: false });
    }
  });

  it('a key outside the scope of the session’s token, and a renewal past the hold limit, are the caller’s: invalid', () => {
    expect(ROUTES.map((route) => outcomeOf(route, 403, 'FORBIDDEN'))).toEqual(['invalid', 'invalid', 'invalid']);
    expect(outcomeOf('renew', 409, 'HOLD_LIMIT_REACHED')).toBe('invalid');
  });

  it('503 and 500 count against S1 on every route; a draining instance’s refusal of an acquire does not', () => {
    for (const route of ROUTES) {
      expect(isS1Bad(outcomeOf(route, 503, 'NOT_LEADER'))).toBe(true);
      expect(isS1Bad(outcomeOf(route, 500, 'INTERNAL'))).toBe(true);
    }
    expect(outcomeOf('acquire', 503, 'NOT_LEADER', true)).toBe('draining');
    expect(isS1Bad('draining')).toBe(false);
  });
});
