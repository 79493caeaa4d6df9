/**
 * SQL migrations after the oldest release this one rolls from (README "Rolling upgrades") only expand:
 * during a roll that release keeps serving on the schema this one migrated, so nothing it reads or
 * writes may be dropped, renamed, retyped or newly required. test/upgrade/rolling-upgrade.test.ts
 * proves it against the real previous release; this catches a contracting statement at once, in the
 * migration that adds it, with the reason.
 */
import { describe, expect, test } from 'vitest';
import { MIGRATIONS } from '../../lock/store/sql/migrations/index.js';
import { PREVIOUS_RELEASE_COMMIT } from '../upgrade/previous-release.js';

/** The last migration of the previous release (commit PREVIOUS_RELEASE_COMMIT): everything after it must expand. */
const LAST_MIGRATION_OF_PREVIOUS_RELEASE = 6;

/** Statements that would break an instance of the previous release still serving on the migrated schema. */
const CONTRACTING: { pattern: RegExp; why: string }[] = [
  { pattern: /\bDROP\s+(TABLE|COLUMN|INDEX|CONSTRAINT|FUNCTION|TRIGGER|VIEW|SEQUENCE)\b/, why: 'drops something the previous release may use' },
  { pattern: /\bRENAME\b/, why: 'renames something the previous release names' },
  { pattern: /\bALTER\s+COLUMN\b[\s\S]*\b(TYPE|SET\s+NOT\s+NULL|DROP\s+DEFAULT)\b/, why: 'changes a column the previous release writes' },
  { pattern: /\bALTER\s+TABLE\b[\s\S]*\bADD\s+CONSTRAINT\b/, why: 'adds a constraint the previous release does not know to keep' },
];

function statementsOf(migration: (typeof MIGRATIONS)[number]): string[] {
  const raw = 'sql' in migration ? migration.sql.split(';') : [...migration.statements];
  return raw.map((s) => s.replace(/--.*$/gm, '').replace(/\s+/g, ' ').trim().toUpperCase()).filter((s) => s.length > 0);
}

/** `ADD COLUMN … NOT NULL` without a DEFAULT: the previous release's INSERTs, which leave it out, would fail. */
function requiredColumnsWithoutDefault(statement: string): string[] {
  return statement
    .split(/\bADD\s+COLUMN\b/)
    .slice(1)
    .map((clause) => clause.replace(/,\s*$/, '').trim())
    .filter((clause) => /\bNOT\s+NULL\b/.test(clause) && !/\bDEFAULT\b/.test(clause));
}

describe(`SQL migrations after the previous release (${PREVIOUS_RELEASE_COMMIT}, up to v${LAST_MIGRATION_OF_PREVIOUS_RELEASE})`, () => {
  test('versions rise strictly in the order they run (each applied once, by version)', () => {
    const versions = MIGRATIONS.map((m) => m.version);
    expect(versions.filter((v, i) => i > 0 && v <= versions[i - 1]!)).toEqual([]);
    // The previous release's migrations are all still here, first: it and this release share their rows.
    expect(versions.slice(0, LAST_MIGRATION_OF_PREVIOUS_RELEASE)).toEqual(Array.from({ length: LAST_MIGRATION_OF_PREVIOUS_RELEASE }, (_, i) => i + 1));
  });

  test('expand only: nothing dropped, renamed, retyped, newly required or newly constrained', () => {
    const problems: string[] = [];
    for (const migration of MIGRATIONS.filter((m) => m.version > LAST_MIGRATION_OF_PREVIOUS_RELEASE)) {
      for (const statement of statementsOf(migration)) {
        for (const { pattern, why } of CONTRACTING) if (pattern.test(statement)) problems.push(`v${migration.version} ${why}: ${statement.slice(0, 160)}`);
        for (const column of requiredColumnsWithoutDefault(statement)) {
          problems.push(`v${migration.version} adds a NOT NULL column without a DEFAULT (the previous release's INSERTs leave it out): ${column.slice(0, 120)}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  test('the check itself: it names a contracting statement and passes an expanding one', () => {
    const contracting = ['ALTER TABLE HOLDFAST_LOCKS DROP COLUMN OWNER', 'ALTER TABLE HOLDFAST_AUDIT RENAME COLUMN AT TO AT_MS', 'ALTER TABLE T ALTER COLUMN X TYPE BIGINT'];
    for (const statement of contracting) expect(CONTRACTING.some(({ pattern }) => pattern.test(statement)), statement).toBe(true);
    expect(requiredColumnsWithoutDefault('ALTER TABLE T ADD COLUMN A TEXT NOT NULL, ADD COLUMN B INT NOT NULL DEFAULT 0')).toEqual(['A TEXT NOT NULL']);
    const expanding = 'ALTER TABLE HOLDFAST_AUDIT_HEAD ADD COLUMN CHECKPOINT_ID BIGINT NOT NULL DEFAULT 0, ADD COLUMN SEAL TEXT';
    expect(CONTRACTING.some(({ pattern }) => pattern.test(expanding))).toBe(false);
    expect(requiredColumnsWithoutDefault(expanding)).toEqual([]);
  });
});
