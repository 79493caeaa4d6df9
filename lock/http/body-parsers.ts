/**
 * Request bodies: JSON only, at most 16 KiB (C3). Anything else is a 400
 * VALIDATION_FAILED, not a 415 outside the pinned table.
 */
import { ValidationFailedError } from '../errors.js';
import type { HttpApp } from './schemas.js';

export const BODY_LIMIT_BYTES = 16 * 1024;

export function registerBodyParsers(app: HttpApp): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT_BYTES }, (_req, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new ValidationFailedError('body is not valid JSON'), undefined);
    }
  });
  app.addContentTypeParser('*', (_req, _payload, done) => done(new ValidationFailedError('body must be application/json'), undefined));
}
