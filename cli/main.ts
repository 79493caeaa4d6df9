/**
 * `holdfast`: run the server, run a command under a lock, or operate a running
 * server over its HTTP API (what the runbooks tell on-call to type).
 *
 * Errors: a human line on stderr; under `-o json` one JSON line
 * `{"error":{"code","message"[,"status"]}}` on stderr instead, so stdout only
 * ever carries results (a pipe into jq sees nothing on failure, the exit code
 * says why). Exit codes: cli/exit-codes.ts.
 */
import { inspect } from 'node:util';
import { CommanderError } from 'commander';
import { HoldfastClientError, ServerError, TransportError, ValidationError } from '../client/index.js';
import { ApiError } from './admin-api.js';
import { wantsJson } from './context.js';
import { CliError, EXIT } from './exit-codes.js';
import { buildProgram } from './program.js';

const argv = process.argv.slice(2);
const json = wantsJson(argv);
// Under -o json commander's own usage message is replaced by the JSON error below.
const { program, ctx } = buildProgram({ quietUsageErrors: json });

interface Failure {
  code: string;
  message: string;
  status?: number;
  exitCode: number;
  hint?: string;
}

function describe(error: unknown): Failure {
  if (error instanceof CommanderError) {
    const shown = ['commander.helpDisplayed', 'commander.version'].includes(error.code);
    return { code: 'USAGE', message: error.message.replace(/^error: /, ''), exitCode: shown ? error.exitCode : EXIT.usage };
  }
  if (error instanceof CliError) return { code: error.code, message: error.message, exitCode: error.exitCode };
  if (error instanceof ApiError) {
    const hint = withheldHint(error.status);
    return { code: error.code, message: `${error.status} ${error.code}: ${error.message}`, status: error.status, exitCode: EXIT.failed, ...(hint ? { hint } : {}) };
  }
  if (error instanceof ServerError) {
    const hint = withheldHint(error.status);
    return { code: error.serverCode, message: error.message, status: error.status, exitCode: EXIT.failed, ...(hint ? { hint } : {}) };
  }
  if (error instanceof ValidationError) return { code: error.code, message: error.message, exitCode: EXIT.usage };
  if (error instanceof TransportError) return { code: 'UNREACHABLE', message: `cannot reach the lock server at ${ctx.url}: ${error.message}; set HOLDFAST_URL`, exitCode: EXIT.failed };
  if (error instanceof HoldfastClientError) return { code: error.code, message: error.message, exitCode: EXIT.failed };
  return { code: 'CLI_ERROR', message: messageOf(error), exitCode: EXIT.failed };
}

/** Why an unauthenticated answer came: the local operator token was withheld, and why. */
function withheldHint(status: number): string | undefined {
  const withheld = ctx.withheldLocalToken;
  if (withheld === undefined || (status !== 401 && status !== 403)) return undefined;
  return `the local operator token in ${withheld.file} was not sent: ${withheld.reason}; for this server set HOLDFAST_TOKEN_FILE (or HOLDFAST_TOKEN)`;
}

/** A readable message for anything thrown — never "[object Object]" (PGlite throws plain objects). */
function messageOf(error: unknown): string {
  if (error instanceof Error && error.message) return error.message;
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message === 'string' && message !== '') return message;
  if (typeof error === 'object' && error !== null) {
    return `unexpected ${error.constructor?.name ?? 'value'} thrown: ${inspect(error, { depth: 2, breakLength: Infinity })}`;
  }
  return String(error);
}

program.parseAsync(argv, { from: 'user' }).catch((error: unknown) => {
  const failure = describe(error);
  if (error instanceof CommanderError && failure.exitCode === EXIT.ok) return; // --help
  if (json) {
    const { exitCode: _exitCode, ...body } = failure;
    process.stderr.write(`${JSON.stringify({ error: body })}\n`);
  } else if (!(error instanceof CommanderError)) {
    process.stderr.write(`holdfast: ${failure.message}\n${failure.hint ? `holdfast: ${failure.hint}\n` : ''}`);
  }
  process.exitCode = failure.exitCode;
});
