/**
 * `POST /v1/local/identity {nonce}` → `{proof}`: the embedded server with a local operator token
 * proves to the CLI that it is the server that wrote that token (lock/local-identity.ts has the
 * protocol). Only that server has the route; it needs no credentials and changes nothing. Not part
 * of the pinned C3 table, so it is left out of the OpenAPI document (C5 describes it).
 */
import type { FastifyInstance } from 'fastify';
import { IDENTITY_ROUTE, identityProof, NONCE_PATTERN } from '../local-identity.js';

export function registerLocalIdentityRoute(app: FastifyInstance, key: Buffer): void {
  app.post(
    IDENTITY_ROUTE,
    {
      schema: {
        hide: true,
        body: {
          type: 'object',
          required: ['nonce'],
          additionalProperties: false,
          properties: { nonce: { type: 'string', pattern: NONCE_PATTERN } },
        },
      },
    },
    async (request) => {
      const { nonce } = request.body as { nonce: string };
      // The local end of this connection: a relay that reached this server on another address or
      // port gets a proof for that one, which the CLI that asked the relay refuses.
      const { localAddress, localPort } = request.socket;
      return { proof: identityProof(key, nonce, localAddress ?? '', localPort ?? 0) };
    },
  );
}
