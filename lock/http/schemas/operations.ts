/** The operations routes: /metrics, /healthz, /readyz and /openapi.json. */
import { Type } from 'typebox';
import { BackendNameSchema } from '../../../contract/records.js';
import { OPEN, errorResponses, json, strictObject } from './parts.js';

export const operationsRouteSchemas = {
  metrics: {
    operationId: 'metrics',
    summary: 'Prometheus metrics (OpenMetrics with exemplars when asked)',
    tags: ['operations'],
    security: OPEN,
    response: {
      200: {
        description: 'The exposition.',
        content: {
          'text/plain': { schema: Type.String() },
          'application/openmetrics-text': { schema: Type.String() },
        },
      },
      ...errorResponses(),
    },
  },
  healthz: {
    operationId: 'healthz',
    summary: 'Liveness: the process answers',
    tags: ['operations'],
    security: OPEN,
    response: { 200: json(strictObject({ status: Type.Literal('ok') }), 'Alive.'), ...errorResponses() },
  },
  readyz: {
    operationId: 'readyz',
    summary: 'Readiness: the store answers (503 NOT_LEADER otherwise)',
    tags: ['operations'],
    security: OPEN,
    response: { 200: json(strictObject({ status: Type.Literal('ready'), backend: BackendNameSchema }), 'Ready.'), ...errorResponses() },
  },
  openapi: {
    operationId: 'openapi',
    summary: 'This document (OpenAPI 3.1)',
    tags: ['operations'],
    security: OPEN,
    response: {
      200: {
        description: 'The OpenAPI document, the same as docs/openapi.json in the source tree.',
        content: { 'application/json': { schema: Type.Object({}, { additionalProperties: true }) } },
      },
      ...errorResponses(),
    },
  },
} as const;
