/**
 * Coalesces the calls that arrive in one event-loop turn into one batch, run
 * by one statement: the statement's fixed cost (a round trip to PostgreSQL, the
 * per-statement overhead of PGlite, an etcd gRPC call) is then paid once per turn
 * instead of once per call. Shared by the SQL store and etcd's point reads. No timer: a lone call goes out on the next turn.
 *
 * `maxInFlight` (group commit): with that many batches already running, new calls
 * wait for one to finish and then go out together, so under load batches grow
 * instead of the pool filling with small statements. Unbounded by default.
 */
export class StatementBatcher<Request, Result> {
  private pending: { request: Request; resolve: (result: Result) => void; reject: (error: unknown) => void }[] = [];
  private scheduled = false;
  private inFlight = 0;

  constructor(
    /** Returns one result per request, in order. */
    private readonly run: (batch: Request[]) => Promise<Result[]>,
    private readonly maxBatch = 256,
    private readonly maxInFlight = Number.POSITIVE_INFINITY,
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
    while (this.pending.length > 0 && this.inFlight < this.maxInFlight) {
      const slice = this.pending.splice(0, this.maxBatch);
      this.inFlight++;
      this.run(slice.map((p) => p.request))
        .then(
          (results) => slice.forEach((p, i) => p.resolve(results[i]!)),
          (error: unknown) => slice.forEach((p) => p.reject(error)),
        )
        .finally(() => {
          this.inFlight--;
          if (this.pending.length > 0 && !this.scheduled) this.flush();
        });
    }
  }
}
