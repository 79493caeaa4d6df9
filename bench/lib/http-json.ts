/**
 * A minimal JSON-over-HTTP client on node:http with a keep-alive agent.
 * node:http rather than fetch: it costs less client CPU per request, and on a
 * 2-core machine the client's CPU is taken from the server being measured.
 */
import http from 'node:http';

export interface JsonResponse {
  status: number;
  body: unknown;
}

export class JsonHttpClient {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;

  /** `connections`: sockets kept open to the server, one per concurrent worker. */
  constructor(baseUrl: string, connections: number) {
    const url = new URL(baseUrl);
    if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
      throw new Error(`bench traffic stays on loopback; refusing ${baseUrl}`);
    }
    this.host = url.hostname;
    this.port = Number(url.port);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  }

  request(method: 'POST' | 'DELETE', path: string, body?: unknown, bearer?: string): Promise<JsonResponse> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.host,
          port: this.port,
          method,
          path,
          agent: this.agent,
          headers: {
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
            ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : undefined });
            } catch (error) {
              reject(error instanceof Error ? error : new Error(String(error)));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
