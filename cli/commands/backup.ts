/**
 * `holdfast backup FILE` and `holdfast restore FILE` for the embedded store (issue 25; C3
 * "Restores"). Offline: each takes the data directory's lock, so each refuses while a server holds it.
 * A restore advances the token floor in the same run, so a restored store never re-issues a token.
 */
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { CliContext } from '../context.js';
import { storeCliAudit } from '../store-actor.js';

const dataDirOption = () =>
  new Option('--data-dir <dir>', "the embedded store's directory (its server stopped)").env('HOLDFAST_DATA_DIR').default('./.holdfast');

export function registerBackup(program: Command, ctx: CliContext): void {
  program
    .command('backup <file>')
    .description('write a consistent copy of the embedded store to FILE (a new file, owner-only); the server must be stopped')
    .addOption(dataDirOption())
    .action(async (file: string, opts: { dataDir: string }) => {
      const { backupEmbeddedStore } = await import('../../lock/store/sql/embedded-backup.js');
      const ownerDir = path.resolve(opts.dataDir);
      const { bytes } = await backupEmbeddedStore(ownerDir, file);
      ctx.print({ file, dataDir: ownerDir, bytes }, () => `backed up the embedded store in ${ownerDir} to ${file} (${bytes} bytes)`);
    });

  program
    .command('restore <file>')
    .description(
      'replace the embedded store with the backup in FILE and advance its token sequence (every new token above every one issued before); ' +
        'the server must be stopped; the store that was there is kept beside it as pgdata.before-restore-TIME; audited',
    )
    .addOption(dataDirOption())
    .option('--reason <reason>', 'why (recorded in the audit trail)', 'restored from a backup')
    .action(async (file: string, opts: { dataDir: string; reason: string }) => {
      const { restoreEmbeddedStore } = await import('../../lock/store/sql/embedded-backup.js');
      const { loadAuditSealer } = await import('../../lock/audit/audit-key.js');
      const ownerDir = path.resolve(opts.dataDir);
      const sealer = await loadAuditSealer(process.env.HOLDFAST_AUDIT_KEY_FILE || undefined);
      const { movedAside, advance } = await restoreEmbeddedStore({ ownerDir, file, sealer, audit: storeCliAudit('restore', opts.reason) });
      ctx.print(
        { file, dataDir: ownerDir, movedAside, previous: advance.previous, floor: advance.floor, identity: advance.identity, auditId: advance.audit.id },
        () =>
          `restored ${file} into ${ownerDir}${movedAside ? ` (the store that was there is in ${movedAside})` : ''}; ` +
          `every new fencing token is above ${advance.floor}; audit entry ${advance.audit.id}`,
      );
    });
}
