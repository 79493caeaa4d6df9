/**
 * The OpenAPI document as text, without a store or a listening socket: the
 * real route table (buildHttpServer) with dependencies that are never called,
 * since building routes does not touch them. `npm run gen` writes it to
 * docs/openapi.json and the freshness test compares; GET /openapi.json serves
 * the same bytes.
 */
import { openApiText } from './openapi.js';
import { buildHttpServer, type HttpServerDeps } from './server.js';

export const OPENAPI_PATH = 'docs/openapi.json';

/**
 * A dependency the document build must not call: reading through it is allowed (route
 * registration may keep a reference), calling anything fails loudly.
 */
function unused<T>(path: string): T {
  return new Proxy(() => undefined, {
    get: (_target, property) => (property === 'then' ? undefined : unused(`${path}.${String(property)}`)),
    apply: () => {
      throw new Error(`building the OpenAPI document called deps.${path}()`);
    },
  }) as T;
}

export async function openApiDocumentText(): Promise<string> {
  const deps: HttpServerDeps = {
    service: unused('service'),
    tokens: unused('tokens'),
    telemetry: unused('telemetry'),
    activity: unused('activity'),
    shutdownSignal: new AbortController().signal,
    renderMetrics: () => Promise.reject(new Error('building the OpenAPI document rendered metrics')),
  };
  const app = buildHttpServer(deps);
  try {
    await app.ready();
    return openApiText(app.swagger());
  } finally {
    await app.close();
  }
}
