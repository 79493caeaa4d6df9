/**
 * fencedRead / fencedWrite (client/fenced.ts): a resource read by shared holders and written by
 * exclusive ones (issue 23 slice 2). Tokens come from one sequence for every kind, so a reader is
 * checked against the last write, and a write against every token seen, readers' included.
 */
import { describe, expect, it } from 'vitest';
import { FencedOutError, ValidationError } from '../../client/errors.js';
import { fencedRead, fencedWrite, type ReadWriteFence } from '../../client/fenced.js';

const fence = (): ReadWriteFence & { highest: Map<string, string>; lastWrite: Map<string, string> } => ({ highest: new Map(), lastWrite: new Map() });

describe('fencedRead and fencedWrite', () => {
  it('readers holding together read in any token order; a write after them needs a token above all of them', () => {
    const f = fence();
    fencedWrite(f, 'report', '10');
    fencedRead(f, 'report', '12');
    fencedRead(f, 'report', '11'); // another reader, granted before 12 and still holding
    fencedRead(f, 'report', '12');
    expect(f.highest.get('report')).toBe('12');
    // A writer deposed before the readers came (token 10, seen before): refused — its token is below theirs.
    expect(() => fencedWrite(f, 'report', '10')).toThrow(FencedOutError);
    fencedWrite(f, 'report', '13'); // the writer the server granted after the readers left
    fencedWrite(f, 'report', '13'); // the same writer again
    expect([f.highest.get('report'), f.lastWrite.get('report')]).toEqual(['13', '13']);
  });

  it('a reader below the last write held its grant before that writer: refused, nothing recorded', () => {
    const f = fence();
    fencedRead(f, 'report', '20');
    fencedWrite(f, 'report', '22');
    expect(() => fencedRead(f, 'report', '21')).toThrow(FencedOutError);
    expect(() => fencedRead(f, 'report', '20')).toThrow(FencedOutError);
    fencedRead(f, 'report', '23');
    expect([f.highest.get('report'), f.lastWrite.get('report')]).toEqual(['23', '22']);
    // Per key; numeric order ("100" > "99"); a malformed token is refused even first.
    fencedWrite(f, 'other', '99');
    fencedRead(f, 'other', '100');
    expect(() => fencedRead(f, 'fresh', '01')).toThrow(ValidationError);
    expect(() => fencedWrite(f, 'fresh', 'x')).toThrow(ValidationError);
  });
});
