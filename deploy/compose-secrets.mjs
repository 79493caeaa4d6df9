// The compose stack's one-shot `secrets` step (deploy/compose.yaml): generates every secret the stack
// uses into DIR (the `holdfast-secrets` volume) on the first `up`, and keeps them afterwards — an
// existing file is never rewritten. Nothing is committed and nothing is a default.
//   node compose-secrets.mjs DIR
//   DIR/holdfast/  (uid 1000, the image's `node` user)  tokens.json, operator.token, viewer.token,
//                   audit.key, database-password
//   DIR/postgres/  (uid 999, the postgres image's user)  password
//   DIR/grafana/   (uid 472, the grafana image's user)   admin-password
// Each secret is 32 random bytes as hex (256 bits; what `openssl rand -hex 32` prints); directories 0700,
// files 0600, owned by the user of the one service that reads them (as root; otherwise left as they are).
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = process.argv[2];
if (!root) {
  process.stderr.write('usage: node compose-secrets.mjs DIR\n');
  process.exit(2);
}
const asRoot = process.getuid?.() === 0;
const UID = { holdfast: 1000, postgres: 999, grafana: 472 };
const secret = () => randomBytes(32).toString('hex');
const written = [];

function own(target, uid) {
  if (asRoot) chownSync(target, uid, uid);
}

function privateDir(name) {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  own(dir, UID[name]);
  return dir;
}

/** Writes `content` to `dir/name` unless it exists; returns the file's content either way. */
function keep(dir, name, content) {
  const file = path.join(dir, name);
  if (!existsSync(file)) {
    writeFileSync(file, content, { mode: 0o600, flag: 'wx' });
    own(file, UID[path.basename(dir)]);
    written.push(path.relative(root, file));
  }
  return readFileSync(file, 'utf8');
}

mkdirSync(root, { recursive: true });
chmodSync(root, 0o755); // each service finds its own directory; only its owner can enter it
const holdfast = privateDir('holdfast');
const postgres = privateDir('postgres');
const grafana = privateDir('grafana');

// The tokens file and the CLI's token files hold the same pair of tokens: an existing tokens file decides.
const existing = (file) => (existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined);
const tokensFile = path.join(holdfast, 'tokens.json');
const listed = existsSync(tokensFile) ? JSON.parse(readFileSync(tokensFile, 'utf8')) : [];
const byRole = (role) => listed.find((entry) => entry.role === role)?.token;
const operator = keep(holdfast, 'operator.token', `${byRole('operator') ?? existing(path.join(holdfast, 'operator.token')) ?? secret()}\n`).trim();
const viewer = keep(holdfast, 'viewer.token', `${byRole('viewer') ?? existing(path.join(holdfast, 'viewer.token')) ?? secret()}\n`).trim();
keep(
  holdfast,
  'tokens.json',
  `${JSON.stringify(
    [
      { name: 'on-call', token: operator, role: 'operator' },
      { name: 'console-viewer', token: viewer, role: 'viewer' },
    ],
    null,
    2,
  )}\n`,
);
keep(holdfast, 'audit.key', `${secret()}\n`);

// One PostgreSQL password, in the file PostgreSQL's first start reads and the one the servers read.
const databasePassword = existing(path.join(postgres, 'password')) ?? existing(path.join(holdfast, 'database-password')) ?? secret();
keep(postgres, 'password', databasePassword);
keep(holdfast, 'database-password', databasePassword);

keep(grafana, 'admin-password', secret());

process.stdout.write(
  written.length > 0 ? `holdfast secrets: generated ${written.join(', ')} in ${root}\n` : `holdfast secrets: all present in ${root}, none changed\n`,
);
