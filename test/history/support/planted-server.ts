/**
 * A Holdfast server process with a planted bug (planted-bugs.ts), for the
 * checker's own tests only: the configured store, opened as `holdfast server`
 * opens it, wrapped by the bug named in HOLDFAST_PLANTED_BUG, then the real
 * composition root. Started like the real server (spawnServer with
 * `node --import tsx <this file>`); stopped by SIGKILL.
 */
import { loadConfig } from '../../../lock/config.js';
import { openStore } from '../../../lock/store/open-store.js';
import { startHoldfastServer } from '../../../server/holdfast-server.js';
import { PLANTED_BUGS, plantBug, type PlantedBug } from './planted-bugs.js';

const bug = process.env.HOLDFAST_PLANTED_BUG as PlantedBug;
if (!PLANTED_BUGS.includes(bug)) throw new Error(`HOLDFAST_PLANTED_BUG must be one of ${PLANTED_BUGS.join(', ')}, not ${bug}`);
const config = loadConfig();
const store = plantBug(bug, await openStore(config), { skewMillis: Number(process.env.HOLDFAST_PLANTED_SKEW_MS ?? 1500) });
const server = await startHoldfastServer(config, { store });
process.stderr.write(`holdfast (planted bug ${bug}): serving on ${server.url}\n`);
