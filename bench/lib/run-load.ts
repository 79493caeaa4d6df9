/**
 * Runs one load task in a worker thread and measures the CPU the process and
 * the PostgreSQL cluster spend inside its measured window.
 */
import { Worker } from 'node:worker_threads';
import { cpuSnapshot, type CpuSnapshot } from './cpu.js';
import type { LoadTask, WorkerMessage } from './load-task.js';

export interface LoadResult {
  latenciesMillis: number[];
  errors: Record<string, number>;
  meanBatchSize?: number;
  waitsMillis?: number[];
  /**
   * CPU ms spent in the measured window; postgres null when no cluster is involved;
   * clientThreadMillis: the load worker's own thread (the client under test), part of nodeMillis.
   */
  cpu: { nodeMillis: number; mainThreadMillis: number; postgresMillis: number | null; clientThreadMillis: number | null };
}

const WORKER_URL = new URL('./load-worker.ts', import.meta.url).href;
const TSX_API_URL = import.meta.resolve('tsx/esm/api');

/** Node 20 cannot start a .ts worker directly: the eval'd bootstrap registers tsx in the worker first. */
const BOOTSTRAP = `import(${JSON.stringify(TSX_API_URL)}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL)}); })`;

/** Beyond its window, a worker gets this long to finish in-flight cycles and close its sessions. */
const GRACE_MILLIS = 60_000;

/**
 * `postmasterPid`: a PostgreSQL postmaster, or any backend process (an etcd
 * member) whose own CPU (plus its children's) counts as the backend's.
 * `onWindow` is told synchronously when the measured window opens and closes.
 */
export function runLoad(task: LoadTask, postmasterPid: number | null, onWindow?: (edge: 'start' | 'end') => void): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(BOOTSTRAP, { eval: true, workerData: task });
    const deadline = setTimeout(
      () => settle(() => {
        void worker.terminate();
        reject(new Error(`load worker did not finish within ${task.warmupSeconds + task.seconds} s + ${GRACE_MILLIS / 1000} s`));
      }),
      (task.warmupSeconds + task.seconds) * 1000 + GRACE_MILLIS,
    );
    let start: CpuSnapshot | undefined;
    let end: CpuSnapshot | undefined;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      outcome();
    };
    worker.on('message', (message: WorkerMessage) => {
      switch (message.type) {
        case 'measuring':
          start = cpuSnapshot(postmasterPid);
          onWindow?.('start');
          break;
        case 'measured':
          end = cpuSnapshot(postmasterPid);
          onWindow?.('end');
          break;
        case 'result': {
          void worker.terminate();
          const from = start ?? cpuSnapshot(postmasterPid);
          const to = end ?? cpuSnapshot(postmasterPid);
          settle(() =>
            resolve({
              latenciesMillis: message.latenciesMillis,
              errors: message.errors,
              ...(message.meanBatchSize !== undefined ? { meanBatchSize: message.meanBatchSize } : {}),
              ...(message.waitsMillis !== undefined ? { waitsMillis: message.waitsMillis } : {}),
              cpu: {
                nodeMillis: to.nodeMillis - from.nodeMillis,
                mainThreadMillis: to.mainThreadMillis - from.mainThreadMillis,
                postgresMillis:
                  to.postgresMillis === null || from.postgresMillis === null ? null : to.postgresMillis - from.postgresMillis,
                clientThreadMillis: message.clientThreadCpuMillis,
              },
            }),
          );
          break;
        }
        case 'failed':
          settle(() => reject(new Error(`load worker failed: ${message.message}`)));
          break;
      }
    });
    worker.on('error', (error) => settle(() => reject(error)));
    worker.on('exit', (code) => settle(() => reject(new Error(`load worker exited (${code}) without a result`))));
  });
}
