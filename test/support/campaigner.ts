/**
 * One campaigner of the election tests, as its own process (so a test can SIGKILL a leader):
 * it opens a session through the SDK, campaigns for the election, and once elected writes to
 * the fenced resource — which lives in the test process — as JSON lines on stdout:
 *
 *   {"event":"ready","id","sessionId"}             session open, campaigning
 *   {"event":"elected","id","term","value"}        leadership granted
 *   {"event":"write","id","term"}                  a write with its term as the fencing token (every 50 ms)
 *   {"event":"lost","id","term","reason"}          the SDK stopped vouching for the leadership
 *
 * Usage: node --import tsx test/support/campaigner.ts URL[,URL…] NAME ID SESSION_TTL_MS
 * SIGTERM resigns and exits 0.
 */
import { LockClient } from '../../client/index.js';

const [urls, name, id, ttl] = process.argv.slice(2) as [string, string, string, string];
const ttlMillis = Number(ttl);
const emit = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ ...event, id })}\n`);

const client = new LockClient({ baseUrl: urls.split(',') });
const session = await client.openSession({ ttlMillis, owner: `campaigner-${id}` });
const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
emit({ event: 'ready', sessionId: session.sessionId });

try {
  const leadership = await session.campaign(name, `value-of-${id}`, { ttlMillis, signal: stop.signal });
  emit({ event: 'elected', term: leadership.term, value: leadership.value });
  const writer = setInterval(() => {
    if (!leadership.signal.aborted) emit({ event: 'write', term: leadership.term });
  }, 50);
  await new Promise<void>((resolve) => {
    leadership.signal.addEventListener('abort', () => resolve(), { once: true });
    stop.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  clearInterval(writer);
  if (leadership.lost) emit({ event: 'lost', term: leadership.term, reason: String(leadership.signal.reason) });
  await leadership.resign();
} catch (error) {
  if (!stop.signal.aborted) throw error;
} finally {
  await session.close();
}
