import { Type, type Static } from 'typebox';
import { ERROR_CODES, type ErrorCode } from './error-table.js';
import { StringEnum } from './records.js';

/**
 * The C3 error table lives in ./error-table.ts (no schema library, so the SDK can bundle it);
 * this file adds the pinned error body as a TypeBox schema for the server's route schemas.
 */
export * from './error-table.js';

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
