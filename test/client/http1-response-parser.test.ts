/**
 * Http1ResponseParser on answers as a server or a proxy may frame them, each
 * fed whole and split at every byte (a socket may deliver any split), and on
 * framings it must refuse rather than guess.
 */
import { describe, expect, it } from 'vitest';
import { Http1ResponseParser, HttpProtocolError, MAX_HEAD_BYTES, type ParsedResponse } from '../../client/http1-response-parser.js';

/** Feeds `raw` in pieces cut at `cuts`; returns the answers that completed and what end() gives after. */
function feed(raw: string, cuts: number[] = []): { answers: ParsedResponse[]; atEnd: ParsedResponse | null; surplus: boolean } {
  const bytes = Buffer.from(raw, 'utf8');
  const parser = new Http1ResponseParser();
  const answers: ParsedResponse[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    const answer = parser.push(bytes.subarray(from, cut));
    if (answer) answers.push(answer);
    from = cut;
  }
  return { answers, atEnd: parser.end(), surplus: parser.hasSurplus };
}

/** The same answer fed whole and split at every byte: each way must read the same. */
function everySplit(raw: string): ParsedResponse {
  const whole = feed(raw);
  expect(whole.answers).toHaveLength(1);
  const length = Buffer.byteLength(raw);
  for (let cut = 1; cut < length; cut += 1) {
    const split = feed(raw, [cut]);
    expect(split.answers, `split at byte ${cut}`).toHaveLength(1);
    expect(split.answers[0]!.body.equals(whole.answers[0]!.body), `body, split at byte ${cut}`).toBe(true);
    expect(split.answers[0]!.status).toBe(whole.answers[0]!.status);
  }
  return whole.answers[0]!;
}

const json = JSON.stringify({ word: 'naïveté', fencingToken: '42' });

describe('Http1ResponseParser framing', () => {
  it('reads a Content-Length body, with headers lower-cased and repeats joined', () => {
    const answer = everySplit(
      `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: r1\r\nVary: a\r\nvary: b\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-request-id')).toBe('r1');
    expect(answer.headers.get('vary')).toBe('a, b');
    expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ word: 'naïveté', fencingToken: '42' });
    expect(answer.reusable).toBe(true);
  });

  it('reads a chunked body with extensions and trailers', () => {
    const bytes = Buffer.from(json, 'utf8');
    // The first chunk ends inside a two-byte character: chunks are bytes, decoded only whole.
    const parser = new Http1ResponseParser();
    const answer = parser.push(
      Buffer.concat([
        Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nc;ext=1\r\n`, 'latin1'),
        bytes.subarray(0, 12),
        Buffer.from(`\r\n${(bytes.length - 12).toString(16)}\r\n`, 'latin1'),
        bytes.subarray(12),
        Buffer.from('\r\n0\r\nX-Trailer: t\r\n\r\n', 'latin1'),
      ]),
    );
    expect(answer?.body.toString('utf8')).toBe(json);
    expect(answer?.reusable).toBe(true);
    expect(parser.hasSurplus).toBe(false);
    const ascii = everySplit('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n');
    expect(ascii.body.toString()).toBe('Wikipedia');
  });

  it('skips interim 1xx answers and reads the final one', () => {
    const answer = everySplit('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}');
    expect(answer.status).toBe(201);
    expect(answer.headers.has('link')).toBe(false);
    expect(answer.body.toString()).toBe('{}');
  });

  it('204 and 304 have no body even when a length is stated; a zero length is an empty body', () => {
    expect(everySplit('HTTP/1.1 204 No Content\r\n\r\n').body.length).toBe(0);
    expect(everySplit('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n').body.length).toBe(0);
    expect(everySplit('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').body.length).toBe(0);
  });

  it('a body with no framing runs to the end of the connection, which then cannot be reused', () => {
    const { answers, atEnd } = feed('HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n\r\n<html>proxy', [30]);
    expect(answers).toHaveLength(0);
    expect(atEnd?.status).toBe(502);
    expect(atEnd?.body.toString()).toBe('<html>proxy');
    expect(atEnd?.reusable).toBe(false);
  });

  it('an answer cut short gives nothing at the end of the connection', () => {
    expect(feed('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial"').atEnd).toBeNull();
    expect(feed('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab').atEnd).toBeNull();
    expect(feed('HTTP/1.1 200 OK\r\nContent-Le').atEnd).toBeNull();
  });

  it('Connection: close, and HTTP/1.0 without keep-alive, end the connection after the answer', () => {
    expect(feed('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n').answers[0]!.reusable).toBe(false);
    expect(feed('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n').answers[0]!.reusable).toBe(false);
    expect(feed('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n').answers[0]!.reusable).toBe(true);
  });

  it('a repeated single-valued field keeps its first value; HTTP/1.0 with Transfer-Encoding ends the connection', () => {
    const answer = feed('HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n').answers[0]!;
    expect(answer.headers.get('retry-after')).toBe('2');
    const old = feed('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n').answers[0]!;
    expect(old.body.toString()).toBe('ok');
    expect(old.reusable).toBe(false);
  });

  it('a body that runs to the end of the connection is taken out piece by piece, not re-joined on every read', () => {
    const parser = new Http1ResponseParser();
    expect(parser.push(Buffer.from('HTTP/1.1 200 OK\r\n\r\n'))).toBeNull();
    const piece = Buffer.alloc(16 * 1024, 0x61);
    for (let i = 0; i < 64; i += 1) {
      expect(parser.push(piece)).toBeNull();
      // Nothing left in the read buffer: each piece was moved to the body as it came (a growing buffer re-joined per read is quadratic).
      expect(parser.hasSurplus).toBe(false);
    }
    expect(parser.end()?.body.length).toBe(64 * piece.length);
  });

  it('bytes past the answer are kept and reported as surplus', () => {
    const { answers, surplus } = feed('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n');
    expect(answers).toHaveLength(1);
    expect(surplus).toBe(true);
  });
});

describe('Http1ResponseParser refuses what it cannot frame safely', () => {
  const refusals: [string, string][] = [
    ['not HTTP', 'SSH-2.0-OpenSSH\r\n\r\n'],
    ['HTTP/2 preface answer', 'HTTP/2 200\r\n\r\n'],
    ['conflicting Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'],
    ['Transfer-Encoding beside Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n'],
    ['lines ended by LF alone', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok'],
    ['a bare LF inside a header line', 'HTTP/1.1 200 OK\r\nX-A: 1\nX-Hidden: 2\r\nContent-Length: 0\r\n\r\n'],
    ['negative Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n'],
    ['folded header line', 'HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 0\r\n\r\n'],
    ['header line without a name', 'HTTP/1.1 200 OK\r\n: nameless\r\nContent-Length: 0\r\n\r\n'],
    ['bad chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['chunk data longer than its size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n'],
  ];
  it.each(refusals)('%s', (_name, raw) => {
    expect(() => feed(raw)).toThrow(HttpProtocolError);
  });

  it('a head that never ends is refused once it passes the limit, not buffered without bound', () => {
    const parser = new Http1ResponseParser();
    parser.push(Buffer.from('HTTP/1.1 200 OK\r\n'));
    const filler = Buffer.from(`X-Pad: ${'a'.repeat(1000)}\r\n`);
    let pushed = 0;
    expect(() => {
      for (;;) {
        parser.push(filler);
        pushed += filler.length;
        if (pushed > 4 * MAX_HEAD_BYTES) break;
      }
    }).toThrow(HttpProtocolError);
    expect(pushed).toBeLessThanOrEqual(MAX_HEAD_BYTES + filler.length);
  });
});
