/**
 * Requests node's HTTP parser refuses before any route sees them (an unknown method token, a raw NUL
 * or non-ASCII byte in the target, a malformed header, a bad chunked body, headers over the limit):
 * answered with the pinned error body, 400 VALIDATION_FAILED, `x-request-id` and `holdfast-backend`,
 * like every other malformed input (C3), and the connection closed, since the parser cannot tell where
 * the next request would start. A request that timed out keeps the bare 408 (C3: no request was read).
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ValidationFailedError } from '../errors.js';

export function clientErrorHandler(backend: string): (error: Error & { code?: string }, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) socket.write(error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? timedOut() : malformed(error.code, backend));
    socket.destroy(error);
  };
}

function timedOut(): string {
  const body = '{"error":"Request Timeout","message":"Client Timeout","statusCode":408}';
  return `HTTP/1.1 408 ${STATUS_CODES[408]}\r\nContent-Length: ${body.length}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`;
}

function malformed(code: string | undefined, backend: string): string {
  const why = code === 'HPE_HEADER_OVERFLOW' ? 'its headers are too large' : `the HTTP parser refused it${code ? ` (${code})` : ''}`;
  // The same error, status and body every route answers for malformed input (lock/errors.ts).
  const error = new ValidationFailedError(`malformed request: ${why}`);
  const body = JSON.stringify(error.toBody());
  return (
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${randomUUID()}\r\nholdfast-backend: ${backend}\r\nConnection: close\r\n\r\n${body}`
  );
}
