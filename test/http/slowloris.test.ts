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
 * the whole process (a busy machine not scheduling it, or the process busy: seen
 * as event-loop delay, measured) delays the server's check and our seeing its
 * close alike. Every stall over the measured span counts, summed (a loaded
 * CI run closed a trickled body 9.7 s after its start, 6.7 s late, while its
 * longest single stall was 0.8 s: many shorter stalls add up), and is added to
 * the bound and printed; but never more than 10 s past the timeout, whatever the
 * stalls: a server that does not enforce its timeouts (or checks them at node's
 * 30 s default) closes these connections up to tens of seconds late (26.9 s and
 * 86.9 s seen in issue 24), and GIVE_UP cuts them at 20 s.
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
/**
 * The most a close may come past its timeout however much the process stalled: 10× the acceptance's
 * slack, still well short of the up to 30 s late an unenforced (node's default) check closes them.
 */
const MOST_LATE = 10_000;
/**
 * A probe still open this long has failed (every bound is at most REQUEST_TIMEOUT + MOST_LATE = 13 s);
 * it is cut so the test ends.
 */
const GIVE_UP = 20_000;
/** The event-loop delay monitor's tick: a stall is the time the loop was late for it. */
const STALL_RESOLUTION = 10;
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
  /** How long this process stalled (event-loop delay), all told and at the longest, over `millis`. */
  stalls: Stalls;
}

interface Stalls {
  /** Every stall summed: the time the loop was not idle-waiting for its next 10 ms tick. */
  total: number;
  longest: number;
}

/**
 * Measures this process's stalls from now until the returned function is called. The monitor's
 * tick records each interval between ticks (10 ms plus the stall before it) but not the one up to
 * its first tick nor the one after its last, so the total is the elapsed time less the idle 10 ms
 * of each interval recorded and of one more: those two unrecorded stalls are counted as well (at
 * most 10 ms too much).
 */
function measureStalls(): () => Stalls {
  const monitor = monitorEventLoopDelay({ resolution: STALL_RESOLUTION });
  const started = performance.now();
  monitor.enable();
  return () => {
    monitor.disable();
    const elapsed = performance.now() - started;
    return {
      total: Math.max(0, elapsed - (monitor.count + 1) * STALL_RESOLUTION),
      longest: monitor.count > 0 ? monitor.max / 1e6 : elapsed,
    };
  };
}

/**
 * One connection of `kind`, trickling a byte every TRICKLE_EVERY ms where it trickles (until the
 * server answers or closes); resolves when the server closes it. We never end it ourselves
 * (except after GIVE_UP).
 */
function probe(kind: Kind): Promise<Closed> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    // Over the same span as `millis`: a stall before it (say, a slow connect) cannot make the close later than measured.
    let stalls: (() => Stalls) | undefined;
    let received = '';
    let started = 0;
    let trickle: NodeJS.Timeout | undefined;
    let cut = false;
    let answered = false;
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
      stalls = measureStalls();
      if (kind === 'trickled body') socket.write(TRICKLED_BODY_HEAD);
      if (kind === 'trickled headers') socket.write(TRICKLED_HEADERS_HEAD);
      if (kind === 'trickled body' || kind === 'trickled headers') trickle = setInterval(() => socket.write('a'), TRICKLE_EVERY);
      if (kind === 'idle after an answer') socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    });
    socket.on('data', (chunk) => {
      clearInterval(trickle);
      received += chunk.toString('latin1');
      // Idle: the server's clock starts with its answer (node arms the idle timer when it is sent).
      if (kind === 'idle after an answer' && received.includes('"status":"ok"') && !answered) {
        answered = true;
        started = performance.now();
        stalls?.();
        stalls = measureStalls();
      }
    });
    socket.on('end', () => clearInterval(trickle));
    socket.on('close', () => {
      clearInterval(trickle);
      clearTimeout(giveUp);
      const millis = performance.now() - started;
      resolve({ millis, received, byServer: !cut, stalls: stalls?.() ?? { total: 0, longest: 0 } });
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
  // The timeout + 1 s + every stall of this process while it was open, but at most the timeout + 10 s.
  const bound = BOUND[kind] + Math.min(SLACK + closed.stalls.total, MOST_LATE);
  const what =
    `${kind}: closed after ${Math.round(closed.millis)} ms, bound ${Math.round(bound)} ms ` +
    `(process stalled ${Math.round(closed.stalls.total)} ms in all, ${Math.round(closed.stalls.longest)} ms at the longest)`;
  console.log(`slowloris probe: ${what}`);
  expect(closed.byServer, `${kind}: the server never closed it (cut after ${GIVE_UP} ms)`).toBe(true);
  expect(closed.millis, what).toBeLessThan(bound);
  if (kind === 'idle after an answer') {
    // Answered once, then closed without another word.
    expect(closed.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(closed.received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  } else {
    // A 408, unless the reset of a byte we sent as it closed discarded it first (see probe()).
    expect(closed.received, `${kind}: answered ${JSON.stringify(closed.received.slice(0, 40))}`).toMatch(/^(HTTP\/1\.1 408 |$)/);
  }
}

describe('each slow connection is closed within its timeout + 1 s (+ the process stalls, at most 10 s)', () => {
  test.each<Kind>(['trickled body', 'trickled headers', 'silent', 'idle after an answer'])('%s', async (kind) => {
    const closed = await probe(kind);
    expectClosedInTime(kind, closed);
    // The body was not cut at the headers' timeout: it had the whole request timeout.
    if (kind === 'trickled body') expect(closed.millis).toBeGreaterThan(HEADERS_TIMEOUT);
  });
});

/** GET /healthz on a connection of its own; its status, how long the answer took and how long this process stalled meanwhile. */
function healthz(): Promise<{ status: number | string; millis: number; stalled: number }> {
  const started = performance.now();
  const stalls = measureStalls();
  return new Promise((resolve) => {
    const done = (status: number | string) => resolve({ status, millis: performance.now() - started, stalled: stalls().total });
    const request = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: GIVE_UP }, (response) => {
      response.resume();
      response.on('end', () => done(response.statusCode ?? 0));
    });
    request.on('timeout', () => request.destroy(new Error('no answer')));
    request.on('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
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

/** /healthz answers the attack test asks for, one after another (~50 in its 6 s on a quiet machine). */
const HEALTHZ_ANSWERS = 10;
/** Asking stops here even short of HEALTHZ_ANSWERS (and the test fails): only bounds a failure. */
const HEALTHZ_GIVE_UP = 60_000;

test('/healthz keeps answering while 300 slow connections are held open, and the slow ones are still closed in time', async () => {
  const attack = slowloris(300);
  try {
    // Let the attack's connections be established.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const answers: { status: number | string; millis: number; stalled: number; held: number }[] = [];
    // Probes on connections of their own while the attack runs through several of its timeouts.
    const kinds: Kind[] = ['trickled body', 'trickled headers', 'silent', 'idle after an answer'];
    const timed = Promise.all(kinds.map(async (kind) => [kind, await probe(kind)] as const));
    // Asked for one after another through at least two of the attack's request timeouts (6 s) and
    // until HEALTHZ_ANSWERS have come, however slow the machine: a count taken over a fixed 6 s
    // measured the machine's pace (a loaded CI run got 1), not whether the server answers.
    const started = performance.now();
    const atLeastUntil = started + REQUEST_TIMEOUT * 2;
    const giveUpAt = started + HEALTHZ_GIVE_UP;
    while ((performance.now() < atLeastUntil || answers.length < HEALTHZ_ANSWERS) && performance.now() < giveUpAt) {
      const held = attack.connected();
      const answer = await healthz();
      answers.push({ ...answer, held });
      // A failed request fails the test below; asking on would only take longer.
      if (answer.status !== 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const askedFor = performance.now() - started;
    const held = answers.map((a) => a.held).sort((a, b) => a - b);
    console.log(
      `slowloris: ${answers.length} /healthz answers in ${Math.round(askedFor)} ms while ${held[0]}–${held[held.length - 1]} slow connections were held ` +
        `(median ${held[held.length >> 1]}), slowest answer ${Math.round(Math.max(...answers.map((a) => a.millis)))} ms ` +
        `(process stalled up to ${Math.round(Math.max(...answers.map((a) => a.stalled)))} ms in all during one); ` +
        `${attack.closedByServer()} slow connections closed by the server`,
    );
    for (const [kind, closed] of await timed) expectClosedInTime(kind, closed);
    expect(answers.length, `only ${answers.length} /healthz answers in ${Math.round(askedFor)} ms`).toBeGreaterThanOrEqual(HEALTHZ_ANSWERS);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      // Generous: a few milliseconds when the machine is idle; plus every stall of this process (which
      // runs the server) while it was asked, as for the probes. A request never answered is cut at
      // GIVE_UP and fails on its status above.
      expect(answer.millis, `answered in ${Math.round(answer.millis)} ms, process stalled ${Math.round(answer.stalled)} ms meanwhile`).toBeLessThan(
        3000 + answer.stalled,
      );
    }
    // The attack was in force: hundreds held at once, and the server kept closing (and so kept
    // timing) them throughout.
    expect(held[held.length - 1]).toBeGreaterThanOrEqual(250);
    expect(attack.closedByServer()).toBeGreaterThanOrEqual(300);
  } finally {
    attack.stop();
  }
  // HEALTHZ_GIVE_UP plus the probes' GIVE_UP and the rest: only bounds a failure.
}, 120_000);

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
