/**
 * What both Node transports (node-http-transport.ts, keep-alive-http-transport.ts) take from a base URL
 * and from a request's headers: one rule for each, so the two cannot drift apart.
 */

/** Where a transport connects and what it writes in every request line and `host` header. */
export interface HttpEndpoint {
  /** The address for the socket: URL keeps the brackets of an IPv6 literal, the socket wants it bare. */
  readonly socketHost: string;
  /** The URL's port, or undefined for the scheme's default. */
  readonly port: number | undefined;
  readonly hostHeader: string;
  /** A path prefix (`https://gw.example/holdfast`), without its trailing slash. */
  readonly pathPrefix: string;
}

export function httpEndpoint(url: URL): HttpEndpoint {
  return {
    socketHost: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? undefined : Number(url.port),
    hostHeader: url.host,
    pathPrefix: url.pathname.replace(/\/+$/, ''),
  };
}

/**
 * Visits the caller's headers a transport sends and answers whether the caller set `accept` (else the
 * transport asks for JSON). As with fetch, the caller may replace `accept`; the transport owns the host
 * and the framing (`content-type`, `content-length`, `transfer-encoding`, `connection`), so a caller's
 * value for those is dropped.
 */
export function forEachCallerHeader(
  headers: Record<string, string> | undefined,
  visit: (name: string, value: string) => void,
): boolean {
  let accept = false;
  if (headers === undefined) return accept;
  for (const name in headers) {
    const lower = name.toLowerCase();
    if (lower === 'host' || lower === 'content-type' || lower === 'content-length' || lower === 'transfer-encoding' || lower === 'connection') continue;
    if (lower === 'accept') accept = true;
    visit(name, headers[name]!);
  }
  return accept;
}
