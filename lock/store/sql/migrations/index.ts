/** Every migration, in the order they run. */
import type { Migration } from './migration.js';
import { v1 } from './v1-tables.js';
import { v2 } from './v2-session-tokens.js';
import { v3 } from './v3-fleet.js';
import { v4 } from './v4-acquire-batch.js';
import { v5 } from './v5-session-opener.js';
import { v6 } from './v6-release-handoff.js';
import { v7 } from './v7-audit-seal.js';
import { v8 } from './v8-audit-actor-scope.js';
import { v9 } from './v9-token-floor.js';
import { v10 } from './v10-console-records.js';
import { v11 } from './v11-acquire-or-wait.js';
import { v12 } from './v12-values-and-watches.js';
import { v13 } from './v13-multi-holder.js';

export const MIGRATIONS: readonly Migration[] = [v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13];
