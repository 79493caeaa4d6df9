/**
 * Migration 13's copies of the previous release's acquire functions (migrations 2, 4 and 11), made
 * anchor-aware: its instances call them mid-roll, and must never take over a key whose holds are live.
 */
import type { Migration } from './migration.js';
import { v2 } from './v2-session-tokens.js';

/** The one statement of `migration` that creates `name`. */
function functionOf(migration: Migration, name: string): string {
  const statements = 'statements' in migration ? migration.statements : [];
  const found = statements.filter((statement) => statement.includes(`CREATE FUNCTION ${name}(`));
  if (found.length !== 1) throw new Error(`migration ${migration.version} has no single CREATE FUNCTION ${name}`);
  return found[0]!;
}

/** `text` with each `pattern` match replaced in turn by the next of `replacements`; exactly that many matches. */
function replaced(text: string, pattern: RegExp, ...replacements: string[]): string {
  let index = 0;
  const out = text.replace(pattern, (...match) => {
    const replacement = replacements[index++];
    if (replacement === undefined) throw new Error(`more than ${replacements.length} matches of ${pattern}`);
    return replacement.replace(/\$(\d)/g, (_, group: string) => String(match[Number(group)]));
  });
  if (index !== replacements.length) throw new Error(`${index} matches of ${pattern}, expected ${replacements.length}`);
  return out;
}

/**
 * The previous release's acquire functions, which its instances call mid-roll, made anchor-aware:
 * each is its original statement (migrations 2, 4 and 11, unchanged) with one branch added — a key
 * whose row is an anchor is decided by holdfast_admit_holder as a mutex attempt (held while a live
 * hold remains, else taken as a mutex row; a limit_mismatch answers held, which is all that release
 * knows). Without it, an older instance would take an anchor over (its session '' is never live)
 * while holds are live.
 */
export const ANCHOR_AWARE_BATCH = (migration: Migration, name: string, waitArgs: string, recorded: string) =>
  replaced(
    replaced(
      replaced(
        replaced(
          functionOf(migration, name).replace(`CREATE FUNCTION ${name}(`, `CREATE OR REPLACE FUNCTION ${name}(`),
          /done boolean;/g,
          'done boolean;\n       a record;',
        ),
        /CONTINUE;(\s+)END IF;(\s+)now_ms := holdfast_now_ms\(\);/g,
        'CONTINUE;$1END IF;$2EXIT WHEN l.mode IS NOT NULL;$2now_ms := holdfast_now_ms();',
      ),
      /CONTINUE WHEN l\.key IS NULL;(\s+)/g,
      'CONTINUE WHEN l.key IS NULL;$1EXIT WHEN l.mode IS NOT NULL;$1',
    ),
    /IF NOT done THEN kinds\[i\] := 'retry'; END IF;/g,
    `IF NOT done AND l.mode IS NOT NULL THEN
           SELECT * INTO a FROM holdfast_admit_holder(p_keys[i], p_sessions[i], owners[i], p_ttls[i], NULL, 'exclusive', 1, ${waitArgs});
           IF a.o_kind = 'granted' THEN
             kinds[i] := 'granted'; done := true;
           ELSIF a.o_kind <> 'retry' THEN
             kinds[i] := CASE WHEN a.o_kind = 'existing' THEN 'existing' ELSE 'held' END;
             holders[i] := holdfast_hold_as_lock(a.o_holder);${recorded}
             done := true;
           END IF;
         END IF;
         IF NOT done THEN kinds[i] := 'retry'; END IF;`,
  );

export const ANCHOR_AWARE_SINGLE = replaced(
  replaced(
    functionOf(v2, 'holdfast_try_acquire').replace('CREATE FUNCTION holdfast_try_acquire(', 'CREATE OR REPLACE FUNCTION holdfast_try_acquire('),
    /inserted integer;/g,
    'inserted integer;\n       a record;',
  ),
  /CONTINUE;(\s+)END IF;(\s+)now_ms := holdfast_now_ms\(\);/g,
  `CONTINUE;$1END IF;$2IF l.mode IS NOT NULL THEN
           SELECT * INTO a FROM holdfast_admit_holder(p_key, p_session, s.owner, p_ttl, NULL, 'exclusive', 1, NULL, NULL, NULL, NULL);
           CONTINUE WHEN a.o_kind = 'retry';
           IF a.o_kind = 'granted' THEN
             RETURN QUERY UPDATE holdfast_locks hl SET fencing_token = nextval('holdfast_fencing_seq') WHERE hl.key = p_key
               RETURNING 'granted'::text, hl.key::text, hl.session_id, hl.owner, hl.fencing_token::text, hl.ttl_millis, hl.granted_at, hl.expires_at;
             RETURN;
           END IF;
           RETURN QUERY SELECT CASE WHEN a.o_kind = 'existing' THEN 'existing' ELSE 'held' END, (a.o_holder).key::text,
             (a.o_holder).session_id, (a.o_holder).owner, (a.o_holder).fencing_token::text, (a.o_holder).ttl_millis,
             (a.o_holder).granted_at, (a.o_holder).expires_at;
           RETURN;
         END IF;$2now_ms := holdfast_now_ms();`,
  `CONTINUE;$1END IF;$2CONTINUE WHEN l.mode IS NOT NULL;$2now_ms := holdfast_now_ms();`,
);
