/**
 * End-to-end tests of the operations console in Debian's Chromium, against a
 * real lock server (embedded store, temp data dir, a token file with an operator
 * and a viewer) and the production console build, both on free loopback ports.
 *
 * Ports, data dir and tokens are chosen once in the runner process and passed
 * to workers through the environment (workers re-evaluate this file).
 */
import { defineConfig } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

function freePorts(count: number): number[] {
  // Synchronous because the config must be ready before webServer starts; the ports are
  // bound to 0 together so the kernel hands out distinct ones.
  const script = `
    const net = require('node:net');
    const servers = Array.from({ length: ${count} }, () => net.createServer());
    let ready = 0;
    for (const s of servers) s.listen(0, '127.0.0.1', () => {
      if (++ready === servers.length) {
        process.stdout.write(servers.map((x) => x.address().port).join(','));
        servers.forEach((x) => x.close());
      }
    });`;
  return execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).split(',').map(Number);
}

if (!process.env.E2E_CONSOLE_PORT) {
  const [serverPort, consolePort] = freePorts(2);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'holdfast-e2e-'));
  const tokensFile = path.join(dataDir, 'admin-tokens.json');
  const operatorToken = `op-${randomBytes(18).toString('base64url')}`;
  const viewerToken = `vw-${randomBytes(18).toString('base64url')}`;
  const scopedViewerToken = `sv-${randomBytes(18).toString('base64url')}`;
  writeFileSync(
    tokensFile,
    JSON.stringify([
      { name: 'e2e-operator', token: operatorToken, role: 'operator' },
      { name: 'e2e-viewer', token: viewerToken, role: 'viewer' },
      // A viewer of one team's keys (issue 26): test/e2e/scoped-viewer.spec.ts.
      { name: 'e2e-team-a-viewer', token: scopedViewerToken, role: 'viewer', prefixes: ['e2e-team-a/'] },
    ]),
    // Secret files others can read are refused (lock/secret-files.ts).
    { mode: 0o600 },
  );
  Object.assign(process.env, {
    E2E_SERVER_PORT: String(serverPort),
    E2E_CONSOLE_PORT: String(consolePort),
    E2E_DATA_DIR: dataDir,
    E2E_TOKENS_FILE: tokensFile,
    E2E_OPERATOR_TOKEN: operatorToken,
    E2E_VIEWER_TOKEN: viewerToken,
    E2E_SCOPED_VIEWER_TOKEN: scopedViewerToken,
  });
}

const serverUrl = `http://127.0.0.1:${process.env.E2E_SERVER_PORT}`;
const consoleUrl = `http://127.0.0.1:${process.env.E2E_CONSOLE_PORT}`;

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export default defineConfig({
  testDir: 'test/e2e',
  outputDir: 'test-results/e2e',
  workers: 1,
  fullyParallel: false,
  forbidOnly: true,
  retries: 0,
  timeout: 120_000,
  // Assertions wait for outcomes; 30 s is 10x a console poll cycle and only bounds a failure.
  expect: { timeout: 30_000 },
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]],
  use: {
    baseURL: consoleUrl,
    headless: true,
    viewport: { width: 1280, height: 800 },
    launchOptions: { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS },
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
  },
  webServer: [
    {
      command: 'node bin/holdfast.js server',
      url: `${serverUrl}/readyz`,
      reuseExistingServer: false,
      timeout: 90_000,
      stdout: 'ignore',
      stderr: 'pipe',
      env: {
        HOLDFAST_STORE: 'embedded',
        HOLDFAST_PORT: process.env.E2E_SERVER_PORT!,
        HOLDFAST_DATA_DIR: process.env.E2E_DATA_DIR!,
        HOLDFAST_ADMIN_TOKENS_FILE: process.env.E2E_TOKENS_FILE!,
        NEXT_TELEMETRY_DISABLED: '1',
      },
    },
    {
      command: `node node_modules/next/dist/bin/next start -p ${process.env.E2E_CONSOLE_PORT} -H 127.0.0.1`,
      url: `${consoleUrl}/signin`,
      reuseExistingServer: false,
      timeout: 90_000,
      stdout: 'ignore',
      stderr: 'pipe',
      env: { HOLDFAST_URL: serverUrl, NEXT_TELEMETRY_DISABLED: '1' },
    },
  ],
});
