/**
 * `holdfast elect`: run a command while this process leads an election
 * (`session.campaign` through the SDK), like `etcdctl elect` — in the frame
 * `holdfast lock` uses (run-locked.ts `runHolding`): signals go to the
 * command, a lost leadership stops it (SIGTERM, SIGKILL after the grace), the
 * session is closed at the end. The command's `HOLDFAST_FENCING_TOKEN` is the
 * term: every later leader's is higher, so a resource fenced on it refuses
 * this command's writes once another process leads.
 */
import { defaultOwner, runHolding, type RunLockedResult } from './run-locked.js';

export interface RunElectedOptions {
  url: string;
  token?: string;
  /** The election key. */
  name: string;
  /** The leader's value (its address, say); none when omitted. */
  value?: string;
  /** TTL of the leadership grant; the server's default when omitted. */
  ttlMillis?: number;
  graceMillis: number;
  owner?: string;
  command: string;
  args: string[];
  note(message: string): void;
}

export async function runElected(options: RunElectedOptions): Promise<RunLockedResult> {
  return runHolding({ ...options, owner: options.owner ?? defaultOwner('holdfast elect') }, async (session, interrupt, supervise) => {
    const leadership = await session.campaign(options.name, options.value, {
      signal: interrupt,
      ...(options.ttlMillis !== undefined ? { ttlMillis: options.ttlMillis } : {}),
    });
    options.note(`elected leader of ${JSON.stringify(leadership.name)} (term ${leadership.term})`);
    try {
      return await supervise({
        key: leadership.name,
        fencingToken: leadership.term,
        get lost() {
          return leadership.lost;
        },
        signal: leadership.signal,
      });
    } finally {
      await leadership.resign().catch((error: unknown) => options.note(`could not resign: ${(error as Error).message}`));
    }
  });
}
