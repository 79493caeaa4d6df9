/**
 * Issue 24 item 8: the HTTP timeouts hold. Over raw sockets against a real server
 * with short configured timeouts: a trickled body, trickled headers, a connection
 * that never sends anything and a kept-alive connection left idle are each closed
 * by the server within their timeout + 1 s (node's defaults let them live up to 30 s
 * past it); /healthz keeps answering new connections while 300 such connections
 * are held open; and a body over the limit gets its pinned 400 answer, never a
 * reset, however much of it the caller goes on sending.
 *
 * Only upper bounds are asserted (a loaded machine makes things later, never
 * earlier), each with the 1 s of slack the acceptance allows (the server checks
 * its connections every 250 ms). The server runs in this process, so a stall of
 * the whole process (a busy machine not scheduling it: seen as event-loop delay,
 * measured) delays the server's check and our seeing its close alike; such a
 * stall is added to the bound and printed. A server that does not enforce its
 * timeouts closes these connections tens of seconds late, far past any stall.
 */
import http from 'node:http';
import net from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openApiChecker } from '../support/openapi.js';
import { startServer, type TestServer } from '../support/server.js';

const REQUEST_TIMEOUT = 3000;
const HEADERS_TIMEOUT = 1500;
const IDLE_TIMEOUT = 2000;
/** What the acceptance allows past a timeout. */
const SLACK = 1000;
/** A probe still open this long after its bound has failed; it is cut so the test ends. */
const GIVE_UP = 10_000;
/** One byte this often keeps a trickling connection busy (far below any timeout). */
const TRICKLE_EVERY = 100;

let server: TestServer;
let port: number;

beforeAll(async () => {
  server = await startServer({
    store: 'embedded',
    env: {
      HOLDFAST_HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT),
      HOLDFAST_HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT),
      HOLDFAST_HTTP_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT),
    },
  });
  port = server.running.port;
});
afterAll(async () => {
  await server?.stop();
});

type Kind = 'trickled body' | 'trickled headers' | 'silent' | 'idle after an answer';

const TRICKLED_BODY_HEAD =
  'POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{"owner":"';
const TRICKLED_HEADERS_HEAD = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';

interface Closed {
  /** From the moment the server's clock for this kind started (connect, or the answer for idle). */
  millis: number;
  /** Everything the server sent. */
  received: string;
  /** The server closed it (not our GIVE_UP cut). */
  byServer: boolean;
  /** The longest this process stalled (event-loop delay) while the connection was open. */
  stallMillis: number;
}

/**
 * One connection of `kind`, trickling a byte every TRICKLE_EVERY ms where it trickles (until the
 * server answers or closes); resolves when the server closes it. We never end it ourselves
 * (except after GIVE_UP).
 */
function probe(kind: Kind): Promise<Closed> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const stalls = monitorEventLoopDelay({ resolution: 10 });
    stalls.enable();
    let received = '';
    let started = 0;
    let trickle: NodeJS.Timeout | undefined;
    let cut = false;
    const giveUp = setTimeout(() => {
      cut = true;
      socket.destroy();
    }, GIVE_UP);
    socket.setNoDelay(true);
    // The server closes a trickling connection with a 408 and at once; a byte of ours arriving after
    // that is answered with a reset, which can also discard the 408 before we read it. Either way it
    // was the server that closed the connection, which is what is measured.
    socket.on('error', () => {});
    socket.on('connect', () => {
      started = performance.now();
      if (kind === 'trickled body') socket.write(TRICKLED_BODY_HEAD);
      if (kind === 'trickled headers') socket.write(TRICKLED_HEADERS_HEAD);
      if (kind === 'trickled body' || kind === 'trickled headers') trickle = setInterval(() => socket.write('a'), TRICKLE_EVERY);
      if (kind === 'idle after an answer') socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    });
    socket.on('data', (chunk) => {
      clearInterval(trickle);
      received += chunk.toString('latin1');
      // Idle: the server's clock starts with its answer (node arms the idle timer when it is sent).
      if (kind === 'idle after an answer' && received.includes('"status":"ok"')) started = performance.now();
    });
    socket.on('end', () => clearInterval(trickle));
    socket.on('close', () => {
      clearInterval(trickle);
      clearTimeout(giveUp);
      stalls.disable();
      resolve({ millis: performance.now() - started, received, byServer: !cut, stallMillis: stalls.max / 1e6 });
    });
  });
}

const BOUND: Record<Kind, number> = {
  'trickled body': REQUEST_TIMEOUT,
  'trickled headers': HEADERS_TIMEOUT,
  silent: HEADERS_TIMEOUT,
  'idle after an answer': IDLE_TIMEOUT,
};

function expectClosedInTime(kind: Kind, closed: Closed) {
  const what = `${kind}: closed after ${Math.round(closed.millis)} ms (process stalled up to ${Math.round(closed.stallMillis)} ms)`;
  console.log(`slowloris probe: ${what}`);
  expect(closed.byServer, `${kind}: the server never closed it`).toBe(true);
  expect(closed.millis, what).toBeLessThan(BOUND[kind] + SLACK + closed.stallMillis);
  if (kind === 'idle after an answer') {
    // Answered once, then closed without another word.
    expect(closed.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(closed.received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  } else {
    // A 408, unless the reset of a byte we sent as it closed discarded it first (see probe()).
    expect(closed.received, `${kind}: answered ${JSON.stringify(closed.received.slice(0, 40))}`).toMatch(/^(HTTP\/1\.1 408 |$)/);
  }
}

describe('each slow connection is closed within its timeout + 1 s', () => {
  test.each<Kind>(['trickled body', 'trickled headers', 'silent', 'idle after an answer'])('%s', async (kind) => {
    const closed = await probe(kind);
    expectClosedInTime(kind, closed);
    // The body was not cut at the headers' timeout: it had the whole request timeout.
    if (kind === 'trickled body') expect(closed.millis).toBeGreaterThan(HEADERS_TIMEOUT);
  });
});

/** GET /healthz on a connection of its own; its status and how long the answer took. */
function healthz(): Promise<{ status: number | string; millis: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: GIVE_UP }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, millis: performance.now() - started }));
    });
    request.on('timeout', () => request.destroy(new Error('no answer')));
    request.on('error', (e: NodeJS.ErrnoException) => resolve({ status: e.code ?? e.message, millis: performance.now() - started }));
  });
}

/**
 * `count` slow connections held open, a third of each trickling kind and silent ones;
 * each one the server closes is replaced soon after, as a slowloris client does.
 */
function slowloris(count: number) {
  const kinds: Kind[] = ['trickled body', 'trickled headers', 'silent'];
  const sockets = new Set<net.Socket>();
  let connected = 0;
  let closedByServer = 0;
  let stopped = false;
  const openOne = (kind: Kind) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    // Read (and drop) what the server sends, so its close is seen.
    socket.resume();
    socket.on('connect', () => {
      connected++;
      if (kind === 'trickled body') socket.write(TRICKLED_BODY_HEAD);
      if (kind === 'trickled headers') socket.write(TRICKLED_HEADERS_HEAD);
    });
    socket.on('close', () => {
      sockets.delete(socket);
      if (stopped) return;
      connected--;
      closedByServer++;
      // Replaced soon, not in the same instant: a hundred closed by one check do not all return at once.
      setTimeout(() => stopped || openOne(kind), Math.random() * 200);
    });
    sockets.add(Object.assign(socket, { kind }));
  };
  for (let i = 0; i < count; i++) openOne(kinds[i % kinds.length]!);
  // One timer feeds every trickling connection a byte now and then (node's timeouts run from the
  // request's first byte whatever arrives after it, so the pace does not matter; this one is cheap).
  const trickle = setInterval(() => {
    for (const socket of sockets) {
      const { kind } = socket as net.Socket & { kind: Kind };
      if (kind !== 'silent' && socket.readyState === 'open') socket.write('a');
    }
  }, 5 * TRICKLE_EVERY);
  return {
    /** Slow connections established and not yet closed. */
    connected: () => connected,
    closedByServer: () => closedByServer,
    stop() {
      stopped = true;
      clearInterval(trickle);
      for (const socket of sockets) socket.destroy();
    },
  };
}

test('/healthz keeps answering while 300 slow connections are held open, and the slow ones are still closed in time', async () => {
  const attack = slowloris(300);
  try {
    // Let the attack's connections be established.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const answers: { status: number | string; millis: number; held: number }[] = [];
    // Probes on connections of their own while the attack runs through several of its timeouts.
    const kinds: Kind[] = ['trickled body', 'trickled headers', 'silent', 'idle after an answer'];
    const timed = Promise.all(kinds.map(async (kind) => [kind, await probe(kind)] as const));
    const until = performance.now() + REQUEST_TIMEOUT * 2;
    while (performance.now() < until) {
      const held = attack.connected();
      answers.push({ ...(await healthz()), held });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const held = answers.map((a) => a.held).sort((a, b) => a - b);
    console.log(
      `slowloris: ${answers.length} /healthz answers while ${held[0]}–${held[held.length - 1]} slow connections were held ` +
        `(median ${held[held.length >> 1]}), slowest answer ${Math.round(Math.max(...answers.map((a) => a.millis)))} ms; ` +
        `${attack.closedByServer()} slow connections closed by the server`,
    );
    for (const [kind, closed] of await timed) expectClosedInTime(kind, closed);
    expect(answers.length).toBeGreaterThan(3);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      // Generous: a few milliseconds when the machine is idle.
      expect(answer.millis).toBeLessThan(3000);
    }
    // The attack was in force: hundreds held at once, and the server kept closing (and so kept
    // timing) them throughout.
    expect(held[held.length - 1]).toBeGreaterThanOrEqual(250);
    expect(attack.closedByServer()).toBeGreaterThanOrEqual(300);
  } finally {
    attack.stop();
  }
});

describe('a body over the 16 KiB limit gets its 400 answer, never a reset', () => {
  /**
   * Sends the whole request and reads the whole answer, then ends the connection and waits for it
   * to close; any socket error on the way (a write refused, a reset) is reported.
   */
  function oversized(bytes: number, chunked: boolean): Promise<{ status: number; contentType: string; text: string; error?: string }> {
    return new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let raw = Buffer.alloc(0);
      let error: string | undefined;
      let sent = false;
      let answer: { status: number; contentType: string; text: string } | undefined;
      const giveUp = setTimeout(() => {
        error ??= `no whole answer within ${GIVE_UP} ms (got ${raw.length} bytes)`;
        socket.destroy();
      }, GIVE_UP);
      const endWhenDone = () => {
        if (sent && answer) socket.end();
      };
      socket.on('error', (e: NodeJS.ErrnoException) => {
        error ??= e.code ?? e.message;
      });
      socket.on('close', () => {
        clearTimeout(giveUp);
        resolve({ status: answer?.status ?? 0, contentType: answer?.contentType ?? '', text: answer?.text ?? '', ...(error ? { error } : {}) });
      });
      socket.on('data', (chunk) => {
        raw = Buffer.concat([raw, chunk]);
        const text = raw.toString('utf8');
        const end = text.indexOf('\r\n\r\n');
        if (end < 0 || answer) return;
        const head = text.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? NaN);
        const body = text.slice(end + 4);
        if (Buffer.byteLength(body) < length) return;
        answer = {
          status: Number(head.slice(9, 12)),
          contentType: /\r\ncontent-type: ([^\r]+)/i.exec(head)?.[1] ?? '',
          text: body.slice(0, length),
        };
        endWhenDone();
      });
      socket.on('connect', () => {
        const body = Buffer.alloc(bytes, 0x20);
        body[0] = 0x7b; // '{': the start of a JSON object
        const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bytes}`;
        socket.write(`POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`);
        const payload = chunked ? Buffer.concat([Buffer.from(`${bytes.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]) : body;
        socket.write(payload, (failed) => {
          if (failed) error ??= (failed as NodeJS.ErrnoException).code ?? failed.message;
          sent = true;
          endWhenDone();
        });
      });
    });
  }

  // Up to 16 MB: more than the kernel's socket buffers hold (4 MB here), so a server that closes
  // after answering has unread bytes in flight, and the caller sees the reset.
  test.each([
    [20_000, false],
    [20_000, true],
    [1_000_000, false],
    [1_000_000, true],
    [16_000_000, false],
    [16_000_000, true],
    [16_000_000, false],
    [16_000_000, true],
  ])('%i bytes (chunked: %s)', async (bytes, chunked) => {
    const answer = await oversized(bytes, chunked);
    expect(answer.error, 'the connection was reset or broken').toBeUndefined();
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toEqual({
      error: { code: 'VALIDATION_FAILED', message: expect.stringMatching(/larger than 16384 bytes/), retryable: false },
    });
    // The pinned error body L1 documents for a 400 (docs/openapi.json).
    openApiChecker().assert({ method: 'POST', path: '/v1/sessions', status: answer.status, contentType: answer.contentType, text: answer.text });
  });
});
