/**
 * K1–K5 (v3, issue 25; an extension of the pinned surface): what the operations console keeps on
 * the lock server so its replicas share sign-ins — one-time sign-in codes and console sessions.
 * The bounds are console-routes.ts's (SIGN_IN rules), read from there so they are written once.
 */
import { Type } from 'typebox';
import { StringEnum } from '../../../contract/records.js';
import { CONSOLE_SIGN_IN } from '../console-sign-in.js';
import { ADMIN_ROLES } from './admin.js';
import { ADMIN_ERRORS, ADMIN_TOKEN, OPEN, errorResponses, json, strictObject } from './parts.js';

const code = Type.String({
  pattern: `^[A-Za-z0-9_-]{${CONSOLE_SIGN_IN.codeChars}}$`,
  description: `the one-time sign-in code K1 answered (${CONSOLE_SIGN_IN.codeChars} base64url characters)`,
});
const consoleSessionParams = Type.Object({
  consoleSessionId: Type.String({ pattern: `^[A-Za-z0-9_-]{${CONSOLE_SIGN_IN.sessionIdChars}}$`, description: 'K3’s `consoleSessionId`' }),
});

export const mintSignInCodeBody = strictObject({
  sealedToken: Type.String({
    minLength: 1,
    maxLength: CONSOLE_SIGN_IN.maxSealedTokenChars,
    pattern: '^[!-~]+$',
    description: 'The presented token, sealed by the console with its own secret; the lock server keeps it opaque and never sees the token in it.',
  }),
});
export const redeemSignInCodeBody = strictObject({ code });

const identity = {
  name: Type.String({ description: 'the token’s name' }),
  role: StringEnum(ADMIN_ROLES),
};

export const consoleRouteSchemas = {
  mintSignInCode: {
    operationId: 'mintSignInCode',
    summary: 'K1 — a one-time console sign-in code for the presented token (v3 extension)',
    description:
      `Valid once, for ${CONSOLE_SIGN_IN.codeTtlMillis / 60_000} minutes, on every console replica; signs in as the presented token. ` +
      `A token has at most ${CONSOLE_SIGN_IN.maxCodesPerIssuer} pending codes (a new one drops its oldest); ` +
      `at ${CONSOLE_SIGN_IN.maxCodes} across all tokens, the token with the most loses its oldest. Kept: the code's id, a SHA-256 digest of its secret, the sealed token, the token's name and role.`,
    tags: ['console'],
    security: ADMIN_TOKEN,
    body: mintSignInCodeBody,
    response: {
      201: json(strictObject({ code, expiresAt: Type.Integer({ description: 'epoch ms (store clock; etcd: this server’s)' }) }), 'The code, shown once.'),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
  redeemSignInCode: {
    operationId: 'redeemSignInCode',
    summary: 'K2 — redeem a sign-in code, once, fleet-wide (v3 extension)',
    description:
      'The code is the credential. An unknown, used or expired code, or a wrong secret for a pending one, is 401 UNAUTHENTICATED. ' +
      `${CONSOLE_SIGN_IN.maxMissesPerCode} wrong secrets for one pending code within ${CONSOLE_SIGN_IN.missWindowMillis / 1000} s lock it for everyone, ` +
      'the right secret included, until the oldest of them is that old: answered 200 with outcome LOCKED and `retryAfterMillis`.',
    tags: ['console'],
    security: OPEN,
    body: redeemSignInCodeBody,
    response: {
      200: json(
        Type.Union([
          strictObject({ outcome: Type.Literal('SIGNED_IN'), ...identity, sealedToken: mintSignInCodeBody.properties.sealedToken }),
          strictObject({ outcome: Type.Literal('LOCKED'), retryAfterMillis: Type.Integer({ minimum: 1 }) }),
        ]),
        'SIGNED_IN: the code is used up, and here is what K1 kept (the console unseals the token); LOCKED: too many wrong secrets for it.',
      ),
      ...errorResponses('UNAUTHENTICATED'),
    },
  },
  openConsoleSession: {
    operationId: 'openConsoleSession',
    summary: 'K3 — start a console session for the presented token (v3 extension)',
    description:
      `Lives ${CONSOLE_SIGN_IN.sessionTtlMillis / 3_600_000} h or until K5; a token has at most ${CONSOLE_SIGN_IN.maxSessionsPerIssuer} (a new one ends its oldest). ` +
      'Kept under a digest of the token’s name and the id, so only that token can check or end it.',
    tags: ['console'],
    security: ADMIN_TOKEN,
    response: {
      201: json(
        strictObject({
          consoleSessionId: consoleSessionParams.properties.consoleSessionId,
          ...identity,
          expiresAt: Type.Integer({ description: 'epoch ms (store clock; etcd: this server’s)' }),
        }),
        'The console session.',
      ),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
  checkConsoleSession: {
    operationId: 'checkConsoleSession',
    summary: 'K4 — is this console session of the presented token live? (v3 extension)',
    tags: ['console'],
    security: ADMIN_TOKEN,
    params: consoleSessionParams,
    response: {
      200: json(strictObject({ consoleSessionId: consoleSessionParams.properties.consoleSessionId, ...identity, expiresAt: Type.Integer() }), 'Live.'),
      ...errorResponses(...ADMIN_ERRORS, 'SESSION_NOT_FOUND'),
    },
  },
  closeConsoleSession: {
    operationId: 'closeConsoleSession',
    summary: 'K5 — sign out: end this console session of the presented token (v3 extension)',
    description: 'Every console replica refuses it from the next request on. 204 also when it had already ended.',
    tags: ['console'],
    security: ADMIN_TOKEN,
    params: consoleSessionParams,
    response: {
      204: Type.Unsafe<undefined>({ type: 'null', description: 'Ended.' }),
      ...errorResponses(...ADMIN_ERRORS),
    },
  },
} as const;
