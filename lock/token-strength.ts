/**
 * No default secrets: a bearer token in the tokens file must not be one of the placeholders the
 * repository ships (deploy/holdfast-tokens.example.json once held `REPLACE-ME-…` tokens that worked
 * as operator) nor weaker than 128 bits.
 *
 * Strength is an estimate from the token's text alone, the usual one for generated secrets:
 * length × log2(the alphabet its characters span) — 16 for hex digits, else the sum of the
 * classes present (10 digits, 26 lower, 26 upper, 33 other printable). So 32 hex digits
 * (`openssl rand -hex 16`) or 22 base64url characters are 128 bits; `openssl rand -hex 32`
 * (256 bits) is what the recipes generate. A token of fewer than 8 distinct characters
 * (`aaaa…`, `client-cccc…`) is weak whatever its length. It cannot tell a random string from a
 * memorable one of the same alphabet; what it catches is placeholders, short tokens and padding.
 */

export const MIN_TOKEN_BITS = 128;
const MIN_DISTINCT_CHARACTERS = 8;

/** Words that only a placeholder contains (matched case-insensitively). */
const PLACEHOLDER_WORDS = /replace[-_ ]?me|change[-_ ]?me|placeholder|your[-_ ]?token/i;
/** In a token (printable text) also a `<fill-me-in>` template. */
const PLACEHOLDER = new RegExp(`${PLACEHOLDER_WORDS.source}|<[^>]*>`, 'i');

export const GENERATE_HINT = 'generate one with: openssl rand -hex 32';

/** The estimated strength of `token` in bits (see the header). */
export function estimatedTokenBits(token: string): number {
  const chars = [...token];
  return chars.length * Math.log2(alphabetSize(token));
}

function alphabetSize(token: string): number {
  if (/^[0-9]+$/.test(token)) return 10;
  if (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token)) return 16;
  let size = 0;
  if (/[0-9]/.test(token)) size += 10;
  if (/[a-z]/.test(token)) size += 26;
  if (/[A-Z]/.test(token)) size += 26;
  if (/[^0-9a-zA-Z]/u.test(token)) size += 33;
  return Math.max(size, 1);
}

/** Why `token` must not be accepted, or null when it may. Never repeats the token. */
export function tokenWeakness(token: string): string | null {
  const placeholder = PLACEHOLDER.exec(token);
  if (placeholder) return `is a placeholder (it contains "${placeholder[0]}"), not a secret; ${GENERATE_HINT}`;
  const distinct = new Set(token).size;
  if (distinct < MIN_DISTINCT_CHARACTERS) {
    return `is too weak: it uses only ${distinct} distinct characters; ${GENERATE_HINT}`;
  }
  const bits = estimatedTokenBits(token);
  if (bits < MIN_TOKEN_BITS) {
    return (
      `is too weak: about ${Math.floor(bits)} bits of entropy by its length and characters, at least ${MIN_TOKEN_BITS} needed ` +
      `(e.g. 32 hex digits or 22 base64url characters); ${GENERATE_HINT}`
    );
  }
  return null;
}

/** Placeholder words in a secret that may be binary (the audit key file), or null. */
export function placeholderIn(text: string): string | null {
  return PLACEHOLDER_WORDS.exec(text)?.[0] ?? null;
}
