/**
 * The input rules of contract C3, once: the fencing-token and session-id
 * patterns, the lock-key rule (with its NFC normalisation) and the numeric
 * limits of the request fields. The server's schemas and checks and the SDK
 * read them from here; a test (test/layers/single-definitions.test.ts) fails
 * when one is written again anywhere else.
 *
 * Plain data and functions, no import at all: the SDK bundles this file, and
 * the console may too, without pulling in a schema library.
 */

// ---- fencing tokens and session ids ----

/** int64 as a decimal string, the form the server answers and accepts (C3). */
export const FENCING_TOKEN_PATTERN = '^(0|[1-9][0-9]{0,18})$';
/** The largest fencing token: int64's maximum (the pattern alone admits 19 nines). */
export const FENCING_TOKEN_MAX = 9223372036854775807n;
const FENCING_TOKEN = new RegExp(FENCING_TOKEN_PATTERN);

/** A decimal int64 fencing token: the pattern and ≤ 9223372036854775807. */
export function isFencingToken(value: unknown): value is string {
  if (typeof value !== 'string' || !FENCING_TOKEN.test(value)) return false;
  // 18 digits or fewer cannot pass int64's maximum: no BigInt on the hot path.
  return value.length < 19 || BigInt(value) <= FENCING_TOKEN_MAX;
}

/** Numeric comparison of two decimal fencing tokens: -1, 0 or 1. */
export function compareFencingTokens(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A holder set as L8 compares it (`after`): the highest token among the holders, "0" when there
 * are none (tokens start at 1).
 */
export function highestHolderToken(holders: readonly { fencingToken: string }[]): string {
  let highest = '0';
  for (const holder of holders) if (compareFencingTokens(holder.fencingToken, highest) > 0) highest = holder.fencingToken;
  return highest;
}

export const SESSION_ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$';

/** The store backends, as the `holdfast-backend` header and every metric's `backend` label name them. */
export const BACKENDS = ['postgres', 'embedded', 'etcd'] as const;
export type BackendName = (typeof BACKENDS)[number];

// ---- limits of request fields (C3 route table) ----

/** L1 `ttlMillis`. */
export const SESSION_TTL_MILLIS = { min: 1_000, max: 300_000, default: 15_000 } as const;
/** L4/L5 `ttlMillis` (L4's default is the server's LOCK_DEFAULT_TTL_MS, itself within these bounds). */
export const LOCK_TTL_MILLIS = { min: 1_000, max: 600_000, default: 30_000 } as const;
/** L4 `waitMillis`: how long the server may wait for a release. */
export const WAIT_MILLIS = { min: 0, max: 30_000, default: 0 } as const;
/** L4 `limit`: holders a key admits at once (1: a mutex; more: a semaphore). Shared grants count as 1. */
export const LOCK_LIMIT = { min: 1, max: 1000, default: 1 } as const;
/** A holder's value (v3, a leader's address, ...): at most this many bytes of UTF-8. */
export const MAX_LOCK_VALUE_BYTES = 4096;
/** L8 `waitMillis`: how long a watch may park before it answers the unchanged state. */
export const WATCH_MILLIS = { min: 0, max: 60_000, default: 30_000 } as const;
/** A lock key's length in UTF-8 bytes, after NFC normalisation. */
export const KEY_BYTES = { min: 1, max: 512 } as const;
/** L1 `owner`, in characters (UTF-16 code units, as JSON Schema counts them). */
export const OWNER_CHARS = { max: 128 } as const;
/** A3/A6 `reason`, in characters. */
export const REASON_CHARS = { min: 1, max: 500 } as const;
/** `limit` of the paged admin lists (A1, A2, A4). */
export const PAGE_LIMIT = { min: 1, max: 1_000, default: 100 } as const;
/** `limit` of A7 (most contended keys). */
export const CONTENTION_TOP_LIMIT = { min: 1, max: 100, default: 10 } as const;
/** `limit` of A7h (one key's history). */
export const HISTORY_LIMIT = { min: 1, max: 500, default: 100 } as const;

// ---- lock keys ----

/** Printable ASCII only: already NFC, nothing invisible, one byte per character (the common case, checked first). */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
/** A UTF-16 surrogate without its partner: it has no UTF-8 encoding (Buffer would silently write U+FFFD). */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** C0 controls, DEL and C1 controls (Unicode Cc): never in a key, nor in any text the server takes. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
/**
 * Characters that print as nothing: Unicode's Default_Ignorable_Code_Point set — zero-width
 * space / joiners (U+200B–U+200D), word joiner (U+2060), BOM (U+FEFF), soft hyphen (U+00AD),
 * every bidirectional control (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069), variation
 * selectors, Hangul fillers, tag characters. Two keys differing only in these look alike.
 */
export const INVISIBLE_CHARACTER = /\p{Default_Ignorable_Code_Point}/u;

export type KeyCheck = { ok: true; key: string } | { ok: false; problem: string };

/**
 * The lock-key rule (C3 "Lock keys"): the key as the store will hold it — normalised to
 * Unicode NFC, so "é" typed precomposed (U+00E9) or decomposed (e + U+0301) is one key — or
 * why it is refused: not 1–512 bytes of UTF-8 after normalisation, a lone surrogate, a control
 * character, or an invisible / bidirectional-control character.
 */
export function checkLockKey(key: string): KeyCheck {
  if (PRINTABLE_ASCII.test(key)) {
    return key.length >= KEY_BYTES.min && key.length <= KEY_BYTES.max ? { ok: true, key } : { ok: false, problem: keyLengthProblem(key.length) };
  }
  if (LONE_SURROGATE.test(key)) return { ok: false, problem: 'lock key must be valid UTF-8 (it holds a lone UTF-16 surrogate)' };
  if (CONTROL_CHARACTER.test(key)) return { ok: false, problem: 'lock key must not contain control characters' };
  const invisible = INVISIBLE_CHARACTER.exec(key);
  if (invisible) {
    return {
      ok: false,
      problem: `lock key must not contain invisible or bidirectional-control characters (found ${codePointName(invisible[0])})`,
    };
  }
  const normalized = key.normalize('NFC');
  const bytes = utf8Length(normalized);
  if (bytes < KEY_BYTES.min || bytes > KEY_BYTES.max) return { ok: false, problem: keyLengthProblem(bytes) };
  return { ok: true, key: normalized };
}

/**
 * A key prefix or a key-valued filter (A1 `prefix`) in the form keys are stored in (NFC), so a
 * decomposed "é" finds the keys it looks like. Not checked: a prefix may be any text.
 */
export function normalizeKeyPrefix(prefix: string): string {
  return PRINTABLE_ASCII.test(prefix) ? prefix : prefix.normalize('NFC');
}

function keyLengthProblem(bytes: number): string {
  return `lock key must be ${KEY_BYTES.min}–${KEY_BYTES.max} bytes of UTF-8 (got ${bytes})`;
}

function codePointName(character: string): string {
  return `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** UTF-8 length of a well-formed string (no lone surrogates), without Buffer or TextEncoder. */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    // A surrogate pair is one 4-byte character: 2 bytes for each of its halves.
    bytes += unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;
  }
  return bytes;
}

/**
 * Text someone else chose (a lock value, v3), made safe to show: every control character and every
 * character that draws nothing or reorders what is drawn (the key rule's two classes above) is
 * written as an escape, so a value cannot fake a line break, a terminal escape sequence or a
 * reversed file name. One definition for the console and the CLI (here, beside the classes: the
 * console bundles this file, which imports nothing).
 */
const VISIBLE_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
/** The key rule's two classes (contract/wire-rules.ts): controls, and characters that draw nothing or reorder what is drawn. */
function drawsNothingOrControls(char: string): boolean {
  return CONTROL_CHARACTER.test(char) || INVISIBLE_CHARACTER.test(char);
}

function escapeCharacter(char: string): string {
  return VISIBLE_ESCAPES[char] ?? `\\u{${char.codePointAt(0)!.toString(16)}}`;
}

/** The value on one line: every invisible character (line breaks too) written as an escape. */
export function visibleValue(value: string): string {
  return Array.from(value, (char) => (drawsNothingOrControls(char) ? escapeCharacter(char) : char)).join('');
}

/** The value over several lines (its full view): line breaks kept, other invisible characters escaped. */
export function visibleMultilineValue(value: string): string {
  return Array.from(value, (char) => (char !== '\n' && char !== '\r' && drawsNothingOrControls(char) ? escapeCharacter(char) : char)).join('');
}

/** C4 (v3): what a grant is, never which key: a mutex, a semaphore permit (limit > 1), or a shared grant. */
export const LOCK_KINDS = ['mutex', 'semaphore', 'shared'] as const;
export type LockKind = (typeof LOCK_KINDS)[number];
/** The kinds of a key that admits several holders. */
export const MULTI_HOLDER_KINDS = ['semaphore', 'shared'] as const satisfies readonly LockKind[];
export type MultiHolderKind = (typeof MULTI_HOLDER_KINDS)[number];

/**
 * The one rule naming a grant's kind: the metrics' `kind` label, the console's and the CLI's kind
 * column. A grant without `mode`/`limit` (a server before v3) is a mutex.
 */
export function lockKindOf(holding: { mode?: string | undefined; limit?: number | undefined }): LockKind {
  if (holding.mode === 'shared') return 'shared';
  return (holding.limit ?? 1) > 1 ? 'semaphore' : 'mutex';
}

/** A key's kind when it admits several holders; undefined for a mutex. */
export function multiHolderKindOf(holding: { mode?: string | undefined; limit?: number | undefined }): MultiHolderKind | undefined {
  const kind = lockKindOf(holding);
  return kind === 'mutex' ? undefined : kind;
}

/** What an acquire asks to hold (v3): a shared grant counts as one holder, so its limit is 1. */
export function holdingOf(req: { mode?: 'exclusive' | 'shared' | undefined; limit?: number | undefined }): { mode: 'exclusive' | 'shared'; limit: number } {
  const mode = req.mode ?? 'exclusive';
  return { mode, limit: mode === 'shared' ? 1 : (req.limit ?? 1) };
}

/** A mutex (exclusive, limit 1): the only holding a release hands to a waiter, and the stores' unchanged hot path. */
export function isMutex(req: { mode?: 'exclusive' | 'shared' | undefined; limit?: number | undefined }): boolean {
  const holding = holdingOf(req);
  return holding.mode === 'exclusive' && holding.limit === 1;
}
