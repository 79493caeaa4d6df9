// A CommonJS consumer of the packed @holdfast/client with no optional peer installed.
import { LockClient, type LockHandle } from '@holdfast/client';

async function main(): Promise<void> {
  const installed = ['prom-client', '@opentelemetry/api'].filter((peer) => {
    try {
      require.resolve(peer);
      return true;
    } catch {
      return false;
    }
  });
  const peers = installed.length === 0 ? 'no optional peer' : `installed: ${installed.join(', ')}`;
  const client = new LockClient({ baseUrl: process.env.HOLDFAST_URL ?? 'http://127.0.0.1:7070' });
  const session = await client.openSession({ owner: 'cjs-example' });
  try {
    const handle: LockHandle | null = await session.acquire('package-test:cjs', { ttlMillis: 10_000 });
    if (handle === null) throw new Error('not granted');
    console.log(`cjs: ${peers}; granted ${handle.key} with token ${handle.fencingToken}`);
    await session.release(handle);
    console.log('cjs: released');
  } finally {
    await session.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
