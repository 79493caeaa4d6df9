import { Type, type Static } from 'typebox';
import { StringEnum } from './records.js';

/**
 * The C3 error table: every pinned error code with its HTTP status and
 * retryability. The server's error classes and the SDK's both read it, so a
 * code cannot mean one thing on the wire and another in a client.
 */
export const ERROR_TABLE = {
  VALIDATION_FAILED: { status: 400, retryable: false },
  UNAUTHENTICATED: { status: 401, retryable: false },
  FORBIDDEN: { status: 403, retryable: false },
  SESSION_NOT_FOUND: { status: 404, retryable: false },
  /** An unknown route or method; not in the brief's table (see C3 notes). */
  NOT_FOUND: { status: 404, retryable: false },
  LOCK_CONTENDED: { status: 409, retryable: true },
  LOCK_LOST: { status: 409, retryable: false },
  DEADLOCK_DETECTED: { status: 409, retryable: false },
  CONTENTION_EXCEEDED: { status: 429, retryable: true },
  NOT_LEADER: { status: 503, retryable: true },
  INTERNAL: { status: 500, retryable: false },
} as const satisfies Record<string, { status: number; retryable: boolean }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

export const ERROR_CODES = Object.keys(ERROR_TABLE) as ErrorCode[];

/** The pinned error body, exactly these keys; `codes` narrows it to what one route and status can answer. */
export function errorBodySchema(codes: readonly ErrorCode[] = ERROR_CODES) {
  return Type.Object(
    {
      error: Type.Object(
        {
          code: StringEnum(codes),
          message: Type.String(),
          retryable: Type.Boolean({ description: 'whether the same request may succeed later (see the error table)' }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  );
}

export const ErrorBodySchema = errorBodySchema();
export type ErrorBody = Static<typeof ErrorBodySchema>;
