/**
 * Store conformance for console records (lock/store/console-records.ts; issue 25, console
 * replicas), run on every backend by console-records.conformance.test.ts:
 * - put/get round-trip a value; put replaces; delete removes; list filters by kind and id prefix,
 *   soonest expiry first, and honours its limit;
 * - a record lapses on the store's clock (a 1 s TTL; polled, never slept on) and is then absent to
 *   get, take, delete and list;
 * - take answers a record once: of many concurrent takes, through two store instances on one
 *   database where the backend has one, exactly one gets it (a one-time sign-in code).
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import type { LockStore } from '../../../lock/store/spi.js';
import { eventually } from '../../support/http.js';

export interface ConsoleRecordsFactory {
  /** One fresh store, and a second instance on the same database or cluster when the backend has one. */
  make(): Promise<{ store: LockStore; peer?: LockStore; cleanup(): Promise<void> }>;
}

const LONG = 120_000;

export function describeConsoleRecords(name: string, factory: ConsoleRecordsFactory): void {
  describe(`console records conformance: ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });
    const fresh = async () => {
      const made = await factory.make();
      cleanups.push(made.cleanup);
      return made;
    };
    const id = () => randomBytes(9).toString('base64url');

    test('put, get, replace, delete and list by kind and id prefix', async () => {
      const { store } = await fresh();
      const records = store.consoleRecords;
      const a = id();
      const put = await records.put({ kind: 'code', id: a, value: '{"n":1}', ttlMillis: LONG });
      expect(put).toMatchObject({ kind: 'code', id: a, value: '{"n":1}' });
      expect(await records.get('code', a)).toMatchObject({ kind: 'code', id: a, value: '{"n":1}' });
      expect(await records.get('session', a)).toBeNull();

      await records.put({ kind: 'code', id: a, value: 'replaced', ttlMillis: LONG });
      expect((await records.get('code', a))?.value).toBe('replaced');

      const prefix = `p-${id()}/`;
      await records.put({ kind: 'fail', id: `${prefix}1`, value: 'x', ttlMillis: LONG });
      await records.put({ kind: 'fail', id: `${prefix}2`, value: 'y', ttlMillis: LONG + 10_000 });
      await records.put({ kind: 'fail', id: `other-${id()}`, value: 'z', ttlMillis: LONG });
      await records.put({ kind: 'code', id: `${prefix}3`, value: 'other kind', ttlMillis: LONG });
      const listed = await records.list('fail', prefix, 10);
      expect(listed.map((r) => r.id)).toEqual([`${prefix}1`, `${prefix}2`]);
      expect(listed.map((r) => r.value)).toEqual(['x', 'y']);
      expect(await records.list('fail', prefix, 1)).toHaveLength(1);
      // An id prefix is literal, not a pattern (SQL's LIKE would read % and _).
      expect(await records.list('fail', 'p-%', 10)).toEqual([]);

      expect(await records.delete('code', a)).toBe(true);
      expect(await records.delete('code', a)).toBe(false);
      expect(await records.get('code', a)).toBeNull();
    });

    test('a record lapses on the store clock: absent to get, take, delete and list', async () => {
      const { store } = await fresh();
      const records = store.consoleRecords;
      const short = id();
      const long = id();
      const prefix = `lapse-${id()}-`;
      await records.put({ kind: 'session', id: `${prefix}${short}`, value: 'short', ttlMillis: 1000 });
      await records.put({ kind: 'session', id: `${prefix}${long}`, value: 'long', ttlMillis: LONG });
      // etcd's leases last at least 2 s; 30 s only bounds a failure.
      await eventually(async () => (await records.get('session', `${prefix}${short}`)) === null, 30_000, 50);
      expect(await records.take('session', `${prefix}${short}`)).toBeNull();
      expect(await records.delete('session', `${prefix}${short}`)).toBe(false);
      expect((await records.list('session', prefix, 10)).map((r) => r.value)).toEqual(['long']);
      expect((await records.get('session', `${prefix}${long}`))?.value).toBe('long');
    });

    test('take answers a record exactly once, whatever races it (two instances where the backend has them)', async () => {
      const { store, peer } = await fresh();
      const takers = [store, peer ?? store];
      for (let round = 0; round < 5; round++) {
        const code = id();
        await store.consoleRecords.put({ kind: 'code', id: code, value: `round ${round}`, ttlMillis: LONG });
        const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => takers[i % 2]!.consoleRecords.take('code', code)));
        const won = answers.filter((answer) => answer !== null);
        expect(won).toHaveLength(1);
        expect(won[0]).toMatchObject({ kind: 'code', id: code, value: `round ${round}` });
        expect(await store.consoleRecords.get('code', code)).toBeNull();
      }
    });
  });
}
