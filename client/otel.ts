/**
 * The slice of @opentelemetry/api the SDK uses, from the optional peer when it
 * is installed, else no-op stand-ins (no spans, no `traceparent` header).
 */
import type * as OtelApi from '@opentelemetry/api';
import { optionalPeer } from './optional-peer.js';

export const otelApi: typeof OtelApi | undefined = optionalPeer<typeof OtelApi>('@opentelemetry/api');

const NO_CONTEXT: OtelApi.Context = {
  getValue: () => undefined,
  setValue: () => NO_CONTEXT,
  deleteValue: () => NO_CONTEXT,
};

export const context: Pick<typeof OtelApi.context, 'active'> = otelApi?.context ?? { active: () => NO_CONTEXT };

export const propagation: Pick<typeof OtelApi.propagation, 'inject'> = otelApi?.propagation ?? { inject: () => {} };
