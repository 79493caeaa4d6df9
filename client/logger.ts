/**
 * The SDK logs through whatever the application passes (a pino logger fits);
 * silent by default so a library never writes to the app's stdout uninvited.
 */
export interface ClientLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export const SILENT_LOGGER: ClientLogger = {
  debug: () => {},
  warn: () => {},
};
