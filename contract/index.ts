/**
 * The contract leaf: wire rules (patterns, limits, the key rule), wire records, the error table, backend names, the metric
 * table and the log event fields that the server, the SDK, the console, the
 * dashboards and the alerts all agree on, and the interfaces lock/ reports through
 * (lock-events.ts, http-events.ts). It imports nothing of the project.
 */
export * from './wire-rules.js';
export * from './records.js';
export * from './errors.js';
export * from './metric-table.js';
export * from './lock-events.js';
export * from './insight.js';
export * from './http-events.js';
export * from './policies.js';
