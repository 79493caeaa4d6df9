/**
 * What each compared system promises, beside what it costs: a fast lock that is not durable,
 * not fenced or not fair is doing less work, and the figures only mean something next to this.
 * Each cell has a short answer (the README's table) and the reason (bench/results/peers.md).
 * Claims about the peers are about them as this bench runs them (one node each, defaults).
 */
import type { SystemId } from './system.js';

export const GUARANTEE_COLUMNS = ['durable', 'fenced', 'fair', 'sessions', 'survives a server loss'] as const;
export type GuaranteeColumn = (typeof GUARANTEE_COLUMNS)[number];

export interface Claim {
  short: string;
  why: string;
}

export interface GuaranteeRow {
  system: SystemId;
  label: string;
  claims: Record<GuaranteeColumn, Claim>;
}

const FENCED: Claim = { short: 'yes', why: 'every grant carries a token from one strictly increasing sequence, across all keys' };
const FAIR: Claim = {
  short: 'yes',
  why: 'a release wakes one waiter, the longest parked (FIFO); measured: the last-releaser share of the contended table',
};
const SESSIONS: Claim = {
  short: 'yes',
  why: 'heartbeated sessions (SDK default TTL 15 s); a lock ends with its session, its own TTL or a release',
};

export const GUARANTEES: readonly GuaranteeRow[] = [
  {
    system: 'holdfast-embedded',
    label: 'Holdfast, embedded store',
    claims: {
      durable: {
        short: 'yes, not power loss',
        why: 'file-backed PGlite survives a server crash and restart; PGlite runs PostgreSQL with fsync off (`-F`), so an OS crash or power cut can lose recent changes',
      },
      fenced: FENCED,
      fair: FAIR,
      sessions: SESSIONS,
      'survives a server loss': {
        short: 'no',
        why: 'one process owns the data directory (by design); locks and tokens are back when it restarts',
      },
    },
  },
  {
    system: 'holdfast-postgres',
    label: 'Holdfast, postgres store',
    claims: {
      durable: { short: 'yes', why: 'every grant is committed to PostgreSQL (fsync on, synchronous_commit on, as in this bench)' },
      fenced: FENCED,
      fair: FAIR,
      sessions: SESSIONS,
      'survives a server loss': {
        short: 'yes',
        why: 'any number of stateless Holdfast instances share one PostgreSQL, so losing one loses nothing; PostgreSQL itself is as available as you run it (this bench: one node)',
      },
    },
  },
  {
    system: 'holdfast-etcd',
    label: 'Holdfast, etcd store',
    claims: {
      durable: { short: 'yes', why: "committed through etcd's raft log (fsync per commit)" },
      fenced: FENCED,
      fair: FAIR,
      sessions: { short: 'yes', why: 'a session is an etcd lease kept alive by its heartbeats; locks end with it' },
      'survives a server loss': {
        short: 'yes',
        why: 'any Holdfast instance, and a minority of etcd members (3 members survive 1 loss; this bench runs 1 member)',
      },
    },
  },
  {
    system: 'etcd3-lock',
    label: 'etcd3 `client.lock()`',
    claims: {
      durable: { short: 'yes', why: "the lock key is written through etcd's raft log" },
      fenced: {
        short: 'no',
        why: "the recipe hands back no token; the key's create revision could serve as one, through your own txns",
      },
      fair: {
        short: 'no',
        why: 'acquire fails at once when the key is held (EtcdLockFailedError); callers retry with backoff, and whoever asks first after a release wins',
      },
      sessions: {
        short: 'lease per lock',
        why: 'each acquire grants its own lease (30 s, kept alive while held) and revokes it on release; nothing groups a client\'s locks',
      },
      'survives a server loss': { short: 'yes', why: 'a minority of etcd members (this bench runs 1 member)' },
    },
  },
  {
    system: 'pg-advisory',
    label: '`pg_advisory_lock`',
    claims: {
      durable: {
        short: 'no',
        why: "held in PostgreSQL's shared memory only: a restart or failover drops every lock, and standbys never see them",
      },
      fenced: { short: 'no', why: 'no token: a paused holder whose connection was cut cannot be told apart from the new one' },
      fair: { short: 'yes', why: "waiters queue in PostgreSQL's lock manager, first come first served" },
      sessions: {
        short: 'connection',
        why: 'the database connection is the session: the lock ends when it closes; no TTL, so a hung client with a live connection holds forever; a transaction-mode pooler breaks it',
      },
      'survives a server loss': { short: 'no', why: 'the locks live in one PostgreSQL process and are not replicated' },
    },
  },
  {
    system: 'redlock',
    label: 'Redlock v5, one Redis',
    claims: {
      durable: {
        short: 'no',
        why: 'persistence off here; with AOF (fsync every second by default) a crash can still forget a lock and grant it twice',
      },
      fenced: { short: 'no', why: 'a random value per lock, not an increasing token' },
      fair: {
        short: 'no',
        why: 'a failed attempt sleeps retryDelay ± retryJitter (200 ± 100 ms); the releaser asks again at once and usually wins',
      },
      sessions: { short: 'no', why: 'each lock has a fixed TTL (30 s here); `using()` can extend it while a routine runs' },
      'survives a server loss': {
        short: 'no',
        why: "one Redis is a single point of failure; Redlock's answer is a majority of independent masters (not measured), and a failover to an async replica can lose a held lock",
      },
    },
  },
];
