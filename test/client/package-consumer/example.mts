// An ESM consumer of the packed @holdfast/client that passes its own prom-client registry.
import { LockClient, type LockHandle } from '@holdfast/client';
import { Registry } from 'prom-client';

const registry = new Registry();
const client = new LockClient({ baseUrl: process.env.HOLDFAST_URL ?? 'http://127.0.0.1:7070', registry });
const session = await client.openSession({ owner: 'esm-example' });
try {
  const handle: LockHandle | null = await session.acquire('package-test:esm', { ttlMillis: 10_000 });
  if (handle === null) throw new Error('not granted');
  console.log(`esm: granted ${handle.key} with token ${handle.fencingToken}`);
  await session.release(handle);
  console.log('esm: released');
} finally {
  await session.close();
}
console.log(await registry.metrics());
