/**
 * Who acts when a CLI command opens the store directly (tokens advance, restore): there is no admin
 * token to name, so the audit entry names the operating-system user and host, marked as the CLI's.
 */
import { hostname, userInfo } from 'node:os';

export function storeCliActor(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = `uid ${process.getuid?.() ?? '?'}`;
  }
  return `cli:${user}@${hostname()}`;
}

/** The audit draft of a store-direct command: the CLI actor, a request id naming the command. */
export function storeCliAudit(command: string, reason: string): { actor: string; requestId: string; reason: string } {
  return { actor: storeCliActor(), requestId: `cli-${command}-${process.pid}-${Date.now()}`, reason };
}
