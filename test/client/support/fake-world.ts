/**
 * One ManualClock, one FakeLockServer, and LockClients talking to it through
 * FakeTransports — the rig for the clock-driven unit tests.
 */
import { Registry } from 'prom-client';
import { LockClient, type LockClientOptions } from '../../../client/client.js';
import { ManualClock } from '../../../client/manual-clock.js';
import { seededRandom } from '../../../client/random.js';
import { FakeLockServer } from './fake-lock-server.js';
import { FakeTransport, type FakeNetwork } from './fake-transport.js';

export interface FakeWorld {
  clock: ManualClock;
  server: FakeLockServer;
  registry: Registry;
  client(options?: Partial<LockClientOptions> & { network?: FakeNetwork }): LockClient;
  /** Drive the clock until `promise` settles. */
  run<T>(promise: Promise<T>): Promise<T>;
}

export function fakeWorld(seed = 1): FakeWorld {
  const clock = new ManualClock(1_000_000);
  const server = new FakeLockServer(clock);
  const registry = new Registry();
  return {
    clock,
    server,
    registry,
    client: ({ network, ...options } = {}) =>
      new LockClient({
        transport: new FakeTransport(server, clock, network),
        clock,
        random: seededRandom(seed),
        registry,
        safetyMarginMillis: 500,
        ...options,
      }),
    run: (promise) => clock.runUntilSettled(promise),
  };
}
