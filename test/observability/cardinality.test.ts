/**
 * Cardinality budget (C4): the /metrics page does not grow with traffic.
 * After 10,000 distinct keys and 2,000 sessions the page has as many series as
 * after 10, and no label value is a key, session id, owner or token we used.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { METRIC_SPECS } from '../../contract/metric-table.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { scrape, type Scrape } from './support/scrape.js';

const SESSIONS = 2_000;
const KEYS_PER_SESSION = 5;
const CONCURRENCY = 16;
const SERVER_FAMILIES = METRIC_SPECS.filter((s) => s.emitter === 'server').length;

let server: TestServer;
let api: ReturnType<typeof httpClient>;
beforeAll(async () => {
  // PostgreSQL: about twice PGlite's request rate here, and cardinality does not depend on the store.
  // The sweeper scans every held lock each pass; this test holds 10,000 and measures none of that.
  server = await startServer({ store: 'postgres', env: { HOLDFAST_SWEEP_INTERVAL_MS: '60000' } });
  api = httpClient(server.url);
});
afterAll(async () => {
  await server?.stop();
});

/** What the traffic put in requests: none of it may become a label value. */
const used = { keys: new Set<string>(), sessions: new Set<string>(), owners: new Set<string>(), tokens: new Set<string>() };

/** One session's worth of traffic: open and acquire its keys; some renew, release and contend too. */
async function sessionTraffic(index: number, tag: string): Promise<void> {
  const owner = `owner-${tag}-${index}`;
  const opened = await api.openSession({ owner, ttlMillis: 300_000 });
  expect(opened.status).toBe(201);
  const sessionId = opened.body.sessionId as string;
  used.owners.add(owner);
  used.sessions.add(sessionId);
  const grants: { key: string; fencingToken: string }[] = [];
  for (let k = 0; k < KEYS_PER_SESSION; k++) {
    const key = `card/${tag}/${index}/${k}`;
    // Long TTLs: the contended-on key must outlive the whole run.
    const answer = await api.acquire(key, { sessionId, ttlMillis: 600_000 });
    expect(answer.status).toBe(200);
    used.keys.add(key);
    used.tokens.add(answer.body.fencingToken);
    grants.push({ key, fencingToken: answer.body.fencingToken });
  }
  // Every tenth session also renews, releases and contends (bounded run time; each family still moves).
  if (index % 10 !== 0 && tag !== 'warm') return;
  expect((await api.renew(grants[0]!.key, { sessionId, fencingToken: grants[0]!.fencingToken })).status).toBe(200);
  expect((await api.release(grants[1]!.key, { sessionId, fencingToken: grants[1]!.fencingToken })).status).toBe(200);
  // The first warm-up session's last key stays held throughout: everyone else contends on it.
  if (tag !== 'warm' || index > 0) expect((await api.acquire('card/warm/0/4', { sessionId })).status).toBe(409);
}

async function drive(sessions: number, tag: string, workers = CONCURRENCY): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < sessions; i = next++) await sessionTraffic(i, tag);
  };
  await Promise.all(Array.from({ length: Math.min(workers, sessions) }, worker));
}

/** Series per family name (histogram buckets, sums and counts each count as one series). */
function seriesPerFamily(result: Scrape): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of result.text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/**
 * prom-client's runtime defaults label by what Node is doing, not by what users send:
 * handle/resource types (sockets, timers) and GC kinds appear as the process first
 * meets them. They are bounded by Node itself, so they are compared by name only.
 */
const RUNTIME_TYPED = /^nodejs_(active_handles|active_resources|active_requests|gc_duration_seconds)/;

test('10,000 keys and 2,000 sessions add no series, and no label value comes from a request', { timeout: 600_000 }, async () => {
  await drive(2, 'warm', 1); // 10 keys, 2 sessions, in order
  const small = await scrape(server.url);

  const started = Date.now();
  await drive(SESSIONS, 'load');
  const seconds = (Date.now() - started) / 1000;
  expect(used.keys.size).toBe(10 + SESSIONS * KEYS_PER_SESSION);
  expect(used.sessions.size).toBe(2 + SESSIONS);
  const large = await scrape(server.url);

  const before = seriesPerFamily(small);
  const after = seriesPerFamily(large);
  const stable = (m: Map<string, number>) => new Map([...m].filter(([name]) => !RUNTIME_TYPED.test(name)));
  expect(stable(after)).toEqual(stable(before));
  // nodejs_active_requests has a series only while Node has a request in flight (a file read, a DNS
  // lookup): its family comes and goes with the moment of the scrape, not with anything sent.
  const named = (m: Map<string, number>) => [...m.keys()].filter((name) => name !== 'nodejs_active_requests').sort();
  expect(named(after)).toEqual(named(before));

  // The lock_* series are exactly the table's closed sets for this backend.
  const budget = METRIC_SPECS.filter((s) => s.emitter === 'server').reduce((total, spec) => {
    const combos = Object.entries(spec.labels)
      .filter(([name]) => name !== 'backend')
      .reduce((n, [, values]) => n * values.length, 1);
    return total + combos * (spec.type === 'histogram' ? spec.buckets!.length + 3 : 1);
  }, 0);
  const lockSeries = [...after].filter(([name]) => name.startsWith('lock_')).reduce((n, [, c]) => n + c, 0);
  expect(lockSeries).toBe(budget);

  // No label value is anything a request carried. (Bucket bounds `le` are not label values
  // here: the parser keeps them as bounds, and a fencing token may well be the number 5.)
  let labelValues = 0;
  for (const family of large.families.values()) {
    for (const series of family.series) {
      for (const [name, value] of Object.entries(series.labels)) {
        labelValues++;
        for (const [what, values] of Object.entries(used)) {
          // Fencing tokens are small decimals; Node's own version numbers may equal one by chance.
          if (what === 'tokens' && family.name === 'nodejs_version_info') continue;
          expect(values.has(value), `${family.name}{${name}="${value}"} is a ${what}`).toBe(false);
        }
      }
    }
  }
  expect(labelValues).toBeGreaterThan(SERVER_FAMILIES);

  process.stdout.write(
    `cardinality: ${SESSIONS} sessions, ${used.keys.size} keys in ${seconds.toFixed(1)} s; ` +
      `${lockSeries} lock_* series, ${[...after.values()].reduce((a, b) => a + b, 0)} series on the page\n`,
  );
});
