/**
 * Reads one HTTP/1.1 response at a time from a socket's bytes, for
 * KeepAliveHttpTransport (one request in flight per connection). It follows
 * RFC 9112's framing rules rather than assuming Holdfast's own answers, so a
 * proxy in between is read correctly too:
 * - interim 1xx answers (100 Continue, 103 Early Hints) are skipped;
 * - a body is chunked when Transfer-Encoding says so (trailers read and
 *   dropped), else Content-Length long, else (no framing) runs to the end of
 *   the connection; 204, 304 and 1xx answers have none;
 * - the connection is reusable unless the answer says `Connection: close`, is
 *   HTTP/1.0 without `keep-alive`, or is read to the connection's end.
 * Anything it cannot frame safely (a bad status line, bare-LF line ends,
 * conflicting lengths, Transfer-Encoding beside Content-Length, a head over
 * 64 KiB, bad chunk sizes) throws: the caller drops the connection.
 */

export interface ParsedResponse {
  status: number;
  /** Header names lower-cased; repeated headers joined with ", ". */
  headers: Map<string, string>;
  body: Buffer;
  /** False when the connection must not carry another request. */
  reusable: boolean;
}

export class HttpProtocolError extends Error {
  override readonly name = 'HttpProtocolError';
}

/** Far above any answer Holdfast or a proxy's error page sends; bounds what a broken peer can make us buffer. */
export const MAX_HEAD_BYTES = 64 * 1024;

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: |$)/;
/** An RFC 9110 token: what a header name or a method may be (the transport checks its requests with it too). */
export const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const EMPTY = Buffer.alloc(0);
/** Fields with one value: a repeat keeps the first, as node:http does (joined, `Retry-After: 2, 2` would read as no number). */
const SINGLE_VALUED = new Set(['retry-after', 'content-type', 'location', 'etag', 'server', 'age', 'expires', 'last-modified']);

type Body =
  | { kind: 'none' }
  | { kind: 'length'; remaining: number }
  | { kind: 'chunked'; stage: 'size' | 'data' | 'data-end' | 'trailers'; remaining: number }
  | { kind: 'to-end' };

interface Head {
  status: number;
  headers: Map<string, string>;
  reusable: boolean;
  body: Body;
}

export class Http1ResponseParser {
  #buffered: Buffer = EMPTY;
  #head: Head | null = null;
  #bodyParts: Buffer[] = [];

  /** Adds bytes; returns the answer once it is complete (bytes past it are left buffered). */
  push(chunk: Buffer): ParsedResponse | null {
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    return this.#advance();
  }

  /** The connection ended: the answer, when it was framed by the connection's end, else null (none came whole). */
  end(): ParsedResponse | null {
    const head = this.#head;
    if (head?.body.kind !== 'to-end') return null;
    this.#bodyParts.push(this.#buffered);
    this.#buffered = EMPTY;
    return this.#finish(head);
  }

  /** True when bytes arrived beyond the last answer (a peer answering what was not asked: drop the connection). */
  get hasSurplus(): boolean {
    return this.#buffered.length > 0;
  }

  #advance(): ParsedResponse | null {
    for (;;) {
      if (this.#head === null) {
        const head = this.#readHead();
        if (head === null) return null;
        if (head.status < 200) continue; // interim answer: the real one follows
        this.#head = head;
      }
      const head = this.#head;
      if (!this.#readBody(head.body)) return null;
      return this.#finish(head);
    }
  }

  #finish(head: Head): ParsedResponse {
    const parts = this.#bodyParts;
    this.#head = null;
    this.#bodyParts = [];
    const body = parts.length === 0 ? EMPTY : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    return { status: head.status, headers: head.headers, body, reusable: head.reusable };
  }

  #readHead(): Head | null {
    const end = this.#buffered.indexOf(HEAD_END);
    if (end < 0) {
      if (this.#buffered.length > MAX_HEAD_BYTES) throw new HttpProtocolError(`response head over ${MAX_HEAD_BYTES} bytes`);
      // A line ended by LF alone would never make the CRLF CRLF we wait for: refuse now, not at the limit.
      const lineFeed = this.#buffered.indexOf(0x0a);
      if (lineFeed === 0 || (lineFeed > 0 && this.#buffered[lineFeed - 1] !== 0x0d)) throw new HttpProtocolError('response line ended by LF without CR');
      return null;
    }
    if (end > MAX_HEAD_BYTES) throw new HttpProtocolError(`response head over ${MAX_HEAD_BYTES} bytes`);
    const text = this.#buffered.toString('latin1', 0, end);
    // A lone CR or LF inside a line could hide a header inside another one's value.
    if (/[\r\n]/.test(text.replaceAll('\r\n', ''))) throw new HttpProtocolError('response head with a bare CR or LF');
    const lines = text.split('\r\n');
    this.#buffered = this.#buffered.subarray(end + HEAD_END.length);
    const statusLine = STATUS_LINE.exec(lines[0]!);
    if (statusLine === null) throw new HttpProtocolError(`not an HTTP/1.x status line: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
    const minor = statusLine[1];
    const status = Number(statusLine[2]);
    const headers = new Map<string, string>();
    for (let i = 1; i < lines.length; i += 1) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      const name = colon > 0 ? line.slice(0, colon) : '';
      // No name, or a folded continuation line (obsolete; RFC 9112 lets a client reject it).
      if (!HTTP_TOKEN.test(name)) throw new HttpProtocolError(`malformed header line: ${JSON.stringify(line.slice(0, 80))}`);
      const lower = name.toLowerCase();
      const value = line.slice(colon + 1).trim();
      const earlier = headers.get(lower);
      if (earlier === undefined) headers.set(lower, value);
      else if (!SINGLE_VALUED.has(lower)) headers.set(lower, `${earlier}, ${value}`);
    }
    const connection = (headers.get('connection') ?? '').toLowerCase();
    let reusable = minor === '1' ? !/\bclose\b/.test(connection) : /\bkeep-alive\b/.test(connection);
    const body = bodyFraming(status, headers);
    // HTTP/1.0 has no chunking: such framing is faulty, so the connection ends with this answer (RFC 9112 §6.1).
    if (body.kind === 'to-end' || (minor === '0' && headers.has('transfer-encoding'))) reusable = false;
    return { status, headers, reusable, body };
  }

  /** Moves body bytes out of the buffer; true once the body is complete. */
  #readBody(body: Body): boolean {
    switch (body.kind) {
      case 'none':
        return true;
      case 'to-end':
        // Moved out as it comes: re-joining a growing buffer on every chunk would be quadratic.
        if (this.#buffered.length > 0) {
          this.#bodyParts.push(this.#buffered);
          this.#buffered = EMPTY;
        }
        return false;
      case 'length': {
        const take = Math.min(body.remaining, this.#buffered.length);
        if (take > 0) {
          this.#bodyParts.push(this.#buffered.subarray(0, take));
          this.#buffered = this.#buffered.subarray(take);
          body.remaining -= take;
        }
        return body.remaining === 0;
      }
      case 'chunked':
        return this.#readChunks(body);
    }
  }

  #readChunks(body: Extract<Body, { kind: 'chunked' }>): boolean {
    for (;;) {
      if (body.stage === 'size') {
        const lineEnd = this.#buffered.indexOf(CRLF);
        if (lineEnd < 0) return this.#lineTooLong();
        const line = this.#buffered.toString('latin1', 0, lineEnd);
        this.#buffered = this.#buffered.subarray(lineEnd + CRLF.length);
        const size = /^([0-9A-Fa-f]{1,12})[ \t]*(?:;.*)?$/.exec(line);
        if (size === null) throw new HttpProtocolError(`bad chunk size line: ${JSON.stringify(line.slice(0, 40))}`);
        body.remaining = parseInt(size[1]!, 16);
        body.stage = body.remaining === 0 ? 'trailers' : 'data';
      } else if (body.stage === 'data') {
        const take = Math.min(body.remaining, this.#buffered.length);
        if (take === 0) return false;
        this.#bodyParts.push(this.#buffered.subarray(0, take));
        this.#buffered = this.#buffered.subarray(take);
        body.remaining -= take;
        if (body.remaining === 0) body.stage = 'data-end';
      } else if (body.stage === 'data-end') {
        if (this.#buffered.length < CRLF.length) return false;
        if (!this.#buffered.subarray(0, CRLF.length).equals(CRLF)) throw new HttpProtocolError('chunk data not followed by CRLF');
        this.#buffered = this.#buffered.subarray(CRLF.length);
        body.stage = 'size';
      } else {
        // Trailer fields, each a line, until an empty line.
        const lineEnd = this.#buffered.indexOf(CRLF);
        if (lineEnd < 0) return this.#lineTooLong();
        this.#buffered = this.#buffered.subarray(lineEnd + CRLF.length);
        if (lineEnd === 0) return true;
      }
    }
  }

  #lineTooLong(): false {
    if (this.#buffered.length > MAX_HEAD_BYTES) throw new HttpProtocolError(`chunked framing line over ${MAX_HEAD_BYTES} bytes`);
    return false;
  }
}

function bodyFraming(status: number, headers: Map<string, string>): Body {
  if (status < 200 || status === 204 || status === 304) return { kind: 'none' };
  const transferEncoding = headers.get('transfer-encoding');
  if (transferEncoding !== undefined) {
    // Both framings at once is how responses are smuggled past a proxy: refuse, as node:http does (RFC 9112 §6.3).
    if (headers.has('content-length')) throw new HttpProtocolError('both Transfer-Encoding and Content-Length');
    // Chunked must be the last coding (RFC 9112 §6.3); anything else runs to the connection's end.
    const codings = transferEncoding.toLowerCase().split(',').map((coding) => coding.trim());
    return codings.at(-1) === 'chunked' ? { kind: 'chunked', stage: 'size', remaining: 0 } : { kind: 'to-end' };
  }
  const contentLength = headers.get('content-length');
  if (contentLength === undefined) return { kind: 'to-end' };
  // A repeated header arrives joined: every copy must agree (RFC 9112 §6.3 rule 5).
  const values = new Set(contentLength.split(',').map((value) => value.trim()));
  const [only] = values;
  if (values.size !== 1 || !/^\d{1,15}$/.test(only!)) throw new HttpProtocolError(`bad Content-Length: ${JSON.stringify(contentLength.slice(0, 40))}`);
  const length = Number(only);
  return length === 0 ? { kind: 'none' } : { kind: 'length', remaining: length };
}
