/**
 * Holds an embedded data directory's lock in its own process until killed, for
 * test/store/data-dir-lock.test.ts:  node --import tsx data-dir-holder.ts <dir>
 */
import { lockDataDir } from '../../../lock/store/sql/data-dir-lock.js';

await lockDataDir(process.argv[2]!);
process.stdout.write('locked\n');
setInterval(() => {}, 1 << 30);
