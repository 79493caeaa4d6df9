/**
 * A migration is either `sql` (plain DDL, split on semicolons) or `statements`
 * (run one by one as given: function bodies contain semicolons). Each file in this
 * folder is one version; they only ever expand, so a release that does not know a
 * later version keeps working beside one that does (issue 25's rolling upgrade).
 */
export type Migration = { version: number } & ({ sql: string } | { statements: readonly string[] });
