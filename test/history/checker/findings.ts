/** What a rule reports: a violation (certain) or an indeterminate item (hinges on an unanswered operation). */
export type RuleName =
  | 'mutex-overlap'
  | 'semaphore-over-limit'
  | 'shared-with-exclusive'
  | 'token-order'
  | 'token-reused'
  | 'fence-regression'
  | 'fence-refused-live-holder'
  | 'lost-grant'
  | 'lost-session'
  | 'lost-release'
  | 'superseded-release';

export interface Finding {
  rule: RuleName;
  verdict: 'violation' | 'indeterminate';
  key?: string;
  /** One line: what is wrong. */
  message: string;
  /** The operations involved, by index: the minimal counterexample. */
  ops: number[];
  /** The span of test-clock time the finding is about (for the timeline). */
  window: [number, number];
  /** Why each bound holds (which operation set it). */
  reasons: string[];
}
