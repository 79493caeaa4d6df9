/**
 * The CLI's exit codes, one meaning each (README "Operating it: the CLI").
 * `holdfast lock` and `holdfast elect` pass CMD's own exit code through, so there 3 and 4 can
 * also be CMD's; `-o json` tells them apart on stderr.
 */
export const EXIT = {
  ok: 0,
  /** The server refused, was unreachable, or answered with an error. */
  failed: 1,
  /** Bad command line: unknown command or option, missing or malformed argument. */
  usage: 2,
  /** Nothing changed (revoke NOT_HELD / TOKEN_MISMATCH, kill NOT_FOUND), or `lock`: not granted within --wait. */
  unchanged: 3,
  /** `lock`: the lock was lost while CMD ran (revoked, expired, session killed, or its policy's hold limit reached); `elect`: the leadership was. */
  lockLost: 4,
  /** `lock`, `elect`: CMD could not be started (not found, not executable), as a shell says. */
  commandNotFound: 127,
} as const;

/** An error that ends the CLI with a given exit code and error code (for `-o json`). */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
  }
}
