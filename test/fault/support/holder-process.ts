/**
 * A lock holder in its own process, for fault (a): it opens a session through
 * the SDK, takes one lock, then every 100 ms reports a write it makes with its
 * fencing token and whether its handle says the lock is lost — one JSON line
 * each on stdout (the test applies the writes to its fenced resource). It keeps
 * writing after a loss on purpose: a process paused between its check and its
 * write does exactly that, and the fence must stop it.
 *   node --import tsx holder-process.ts <baseUrl> <key> <sessionTtlMillis> <lockTtlMillis>
 */
import { LockClient } from '../../../client/client.js';

const [baseUrl, key, sessionTtl, lockTtl] = process.argv.slice(2);
const client = new LockClient({ baseUrl: baseUrl! });
const session = await client.openSession({ ttlMillis: Number(sessionTtl), owner: 'paused-holder' });
const handle = await session.acquire(key!, { ttlMillis: Number(lockTtl) });
if (!handle) {
  process.stdout.write(`${JSON.stringify({ event: 'not_granted' })}\n`);
  process.exit(1);
}
const report = (event: string) =>
  process.stdout.write(`${JSON.stringify({ event, token: handle.fencingToken, lost: handle.lost, sessionLost: session.lost, at: Date.now() })}\n`);
report('granted');
// Renewed in the background like withLock does, so only the pause can lose it.
void session.withLock(key!, () => new Promise<void>(() => {}));
setInterval(() => report('write'), 100);
