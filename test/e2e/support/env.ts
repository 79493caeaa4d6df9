/** What playwright.config.ts set up for this run: ports, tokens, data dir. */
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run the e2e tests through playwright.config.ts`);
  return value;
}

export const e2e = {
  get serverUrl() {
    return `http://127.0.0.1:${required('E2E_SERVER_PORT')}`;
  },
  get consoleUrl() {
    return `http://127.0.0.1:${required('E2E_CONSOLE_PORT')}`;
  },
  get operatorToken() {
    return required('E2E_OPERATOR_TOKEN');
  },
  get viewerToken() {
    return required('E2E_VIEWER_TOKEN');
  },
  /** A viewer scoped to `scopedPrefix` (issue 26). */
  get scopedViewerToken() {
    return required('E2E_SCOPED_VIEWER_TOKEN');
  },
  scopedPrefix: 'e2e-team-a/',
  get tokensFile() {
    return required('E2E_TOKENS_FILE');
  },
  operatorName: 'e2e-operator',
  viewerName: 'e2e-viewer',
};

/** A key prefix no other test uses, so tests sharing one server never see each other's locks. */
export function uniquePrefix(label: string): string {
  return `e2e-${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}/`;
}
