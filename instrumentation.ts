/**
 * Next.js runs `register` once when the console starts. A bad HOLDFAST_CONSOLE_SECRET_FILE (others can
 * read it, too short, unreadable) stops the start here, naming the file and the fix, instead of
 * every request failing later (app/lib/server/console-secret.ts).
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  const { loadConsoleSecret } = await import('./app/lib/server/console-secret');
  try {
    loadConsoleSecret();
  } catch (error) {
    process.stderr.write(`holdfast console: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
