/**
 * prom-client and @opentelemetry/api are optional peer dependencies of
 * @holdfast/client: an application without them must still load the SDK (and
 * then gets no meters and no spans). So neither is imported at module load;
 * they are required on first need, synchronously, because `new LockClient()`
 * is synchronous. Both packages load through `require` (prom-client is
 * CommonJS; the OpenTelemetry API keeps its globals on `globalThis`, so its
 * CommonJS and ESM copies share one registered provider).
 */
import { createRequire } from 'node:module';

// In the CommonJS build tsup shims `import.meta.url` from `__filename`.
const requireFromHere = createRequire(import.meta.url);

/** The named package, or undefined when it is not installed. Any other load error is thrown. */
export function optionalPeer<T>(name: string): T | undefined {
  try {
    return requireFromHere(name) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}
