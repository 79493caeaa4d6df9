/**
 * Coalesces concurrent calls into shared statements: calls submitted in the
 * same event-loop turn are flushed together on setImmediate, as one call of
 * `run` per batch of at most `maxBatch`. This is the prototype of the batcher
 * the design note in bench/results/foundation.md proposes for the store.
 *
 * `run` answers one output per input, in input order; a failure fails every
 * call of that batch (the batch was one statement and one commit).
 */
export class StatementBatcher<In, Out> {
  private queue: { input: In; resolve: (out: Out) => void; reject: (error: Error) => void }[] = [];
  private scheduled = false;
  /** Sizes of flushed batches, for the report. */
  readonly batchSizes: number[] = [];

  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    private readonly maxBatch: number,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.batchSizes.push(batch.length);
      this.run(batch.map((call) => call.input)).then(
        (outputs) => batch.forEach((call, i) => call.resolve(outputs[i]!)),
        (error: unknown) => {
          const failure = error instanceof Error ? error : new Error(String(error));
          for (const call of batch) call.reject(failure);
        },
      );
    }
  }
}
