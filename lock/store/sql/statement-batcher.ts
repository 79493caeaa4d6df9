/**
 * Coalesces the calls that arrive in one event-loop turn into one batch, run
 * by one statement: the statement's fixed cost (a round trip to PostgreSQL, the
 * per-statement overhead of PGlite) is then paid once per turn instead of once
 * per call. No timer: a lone call goes out on the next turn.
 */
export class StatementBatcher<Request, Result> {
  private pending: { request: Request; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  private scheduled = false;

  constructor(
    /** Returns one result per request, in order. */
    private readonly run: (batch: Request[]) => Promise<Result[]>,
    private readonly maxBatch = 256,
  ) {}

  submit(request: Request): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs one request as a batch of its own, now (a retry after its batch failed). */
  async submitAlone(request: Request): Promise<Result> {
    return (await this.run([request]))[0]!;
  }

  private flush(): void {
    this.scheduled = false;
    const queue = this.pending;
    this.pending = [];
    for (let start = 0; start < queue.length; start += this.maxBatch) {
      const slice = queue.slice(start, start + this.maxBatch);
      this.run(slice.map((p) => p.request)).then(
        (results) => slice.forEach((p, i) => p.resolve(results[i]!)),
        (error: unknown) => slice.forEach((p) => p.reject(error)),
      );
    }
  }
}
