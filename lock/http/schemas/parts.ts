/**
 * The pieces every route group's schemas are made of: request parts (ids,
 * tokens, free text, query strings, the key and session path parameters), the
 * security requirements, and the error answers a route lists per status. The
 * bounds are contract's (contract/wire-rules.ts), the error table too
 * (contract/error-table.ts): nothing here restates a limit or a status.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import { Type, type Static, type TSchema } from 'typebox';
import { ERROR_TABLE, errorBodySchema, type ErrorCode } from '../../../contract/errors.js';
import { KEY_BYTES, PAGE_LIMIT, SESSION_ID_PATTERN } from '../../../contract/wire-rules.js';

/** The app as buildHttpServer makes it: handlers are type-checked against these schemas. */
export type HttpApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

export const strictObject = <P extends Parameters<typeof Type.Object>[0]>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

/** A schema with the description its place in the document gives it. */
export const json = <T extends TSchema>(schema: T, description: string) => ({ ...schema, description }) as T;

// ---- request parts ----

/** Checked in full (pattern and int64 range) by the handler, with a message naming the field. */
export const token = Type.String({ minLength: 1, maxLength: 19, description: 'int64 as a decimal string' });
export const sessionId = Type.String({ pattern: SESSION_ID_PATTERN });

/**
 * No control characters (Unicode Cc) and no lone UTF-16 surrogates (Cs: PostgreSQL would store
 * U+FFFD, and an audit reason would then no longer match its hash); with `min > 0`, at least one
 * visible character. Ajv compiles patterns with the `u` flag, where a surrogate pair is one code point.
 */
const ALLOWED = '[^\\p{Cc}\\p{Cs}]';
const VISIBLE = '[^\\p{Cc}\\p{Cs}\\s]';
export const text = (max: number, min = 0) =>
  Type.String({ minLength: min, maxLength: max, pattern: min > 0 ? `^${ALLOWED}*${VISIBLE}${ALLOWED}*$` : `^${ALLOWED}*$` });

/** Query values stay strings (no coercion); `parseLimit` reads `limit`, the store checks `cursor`. */
export const queryString = (max: number, description: string) => Type.Optional(Type.String({ maxLength: max, description }));
/** A `limit` query value: its range and default as the description. */
export const limitQuery = (limit: { min: number; max: number; default: number }, what = '') =>
  queryString(8, `${what}${limit.min}–${limit.max} (default ${limit.default})`);
export const pageLimit = limitQuery(PAGE_LIMIT, 'page size, ');
export const cursor = queryString(1024, 'nextCursor of the previous page');

export const keyParams = Type.Object({
  key: Type.String({
    description:
      `The lock key: ${KEY_BYTES.min}–${KEY_BYTES.max} bytes of UTF-8 after Unicode NFC normalisation, without control, ` +
      'invisible (zero-width, default-ignorable) or bidirectional-control characters, percent-encoded as one path segment ' +
      '(a `/` inside a key is `%2F`; an unencoded one answers 404 NOT_FOUND naming this).',
  }),
});
export const sessionParams = Type.Object({ sessionId });

// ---- security ----

type Security = { [scheme: string]: string[] }[];
/** L1/L7: open unless the tokens file has `client` entries. */
export const CLIENT_TOKEN: Security = [{}, { clientToken: [] }];
export const SESSION_TOKEN: Security = [{ sessionToken: [] }];
export const ADMIN_TOKEN: Security = [{ adminToken: [] }];
export const OPEN: Security = [];

// ---- error answers ----

const retryAfter = {
  'retry-after': Type.Integer({ minimum: 1, description: 'seconds to wait before retrying' }),
};

/** Every route can answer these: malformed input, shutdown or an unreachable store, a bug. */
const ALWAYS: readonly ErrorCode[] = ['VALIDATION_FAILED', 'NOT_LEADER', 'INTERNAL'];

/** The admin routes' auth answers: 401 before anything else is looked at, 403 for too low a role. */
export const ADMIN_ERRORS: ErrorCode[] = ['UNAUTHENTICATED', 'FORBIDDEN'];

/**
 * The error bodies routes answer, one named schema per set of codes a status can carry
 * (`Error_LOCK_CONTENDED_DEADLOCK_DETECTED`): registered beside the record components, so the
 * document names each once and generated clients get one type per set.
 */
export const errorComponents = new Map<string, TSchema>();

/** Error answers of a route, one response per status, each naming the codes possible there. */
export function errorResponses(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...ALWAYS, ...codes]) {
    const { status } = ERROR_TABLE[code];
    byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, statusCodes]) => {
      const name = ['Error', ...statusCodes].join('_');
      if (!errorComponents.has(name)) errorComponents.set(name, errorBodySchema(statusCodes));
      const body = Type.Unsafe<Static<ReturnType<typeof errorBodySchema>>>({
        $ref: `${name}#`,
        description: statusCodes.map((code) => `${code}: ${ERROR_TABLE[code].meaning}`).join('; '),
        ...(statusCodes.some((code) => ERROR_TABLE[code].retryAfter) ? { headers: retryAfter } : {}),
      });
      return [status, body];
    }),
  );
}
